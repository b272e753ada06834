//go:build !unix

package log

// softFileLimit has no limit to read here; 4096 is assumed.
func softFileLimit() int { return 4096 }
