// Package processors is the client of the processors' admin API
// (/v1/processors on any member's admin address): deploy, list, status,
// pause, resume, delete and state queries. `brokerd processor ...` is a
// thin shell over it.
package processors
