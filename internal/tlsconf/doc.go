// Package tlsconf builds the server side of brokerd's SSL listeners from
// Kafka's ssl.* settings: PEM key stores and trust stores (KIP-651), client
// authentication, certificates reloaded in place, and the principal a client
// certificate maps to (ssl.principal.mapping.rules).
package tlsconf
