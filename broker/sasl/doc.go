// Package sasl is the server side of brokerd's SASL mechanisms: PLAIN
// (RFC 4616) and SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), as
// Kafka speaks them in SaslAuthenticate tokens.
//
// A Server holds the enabled mechanisms and a credential lookup (the
// replicated SCRAM credentials); each authentication attempt is an
// Exchange, fed the client's tokens one at a time. SCRAM runs on
// github.com/xdg-go/scram; PLAIN derives the SCRAM keys from the offered
// password with the stored salt and iterations and compares them in
// constant time, so one stored credential serves both. The package knows
// nothing of connections or of the Kafka wire: broker/wire drives it.
package sasl
