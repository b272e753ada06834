package tlsconf

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// rfc2253Keywords are the attribute types RFC 2253 names by keyword, and
// Java's X500Principal.getName(RFC2253) with it (and so Kafka's
// principals); any other type is written as its OID with the value's DER
// in hex.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.6":                    "C",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// rawATV is an attribute with its value's DER kept as it came, which the
// hex form needs (re-encoding a decoded string may change its tag).
type rawATV struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rawRDNSET is one RDN; the SET suffix makes encoding/asn1 read a SET OF.
type rawRDNSET []rawATV

// rfc2253 writes a DER-encoded distinguished name as RFC 2253 does: the
// last RDN of the sequence first, multi-valued RDNs joined with "+".
func rfc2253(der []byte) (string, error) {
	var rdns []rawRDNSET
	rest, err := asn1.Unmarshal(der, &rdns)
	if err != nil {
		return "", fmt.Errorf("parse subject: %w", err)
	}
	if len(rest) > 0 {
		return "", errors.New("parse subject: trailing data")
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if i < len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, atv := range rdns[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			oid := atv.Type.String()
			if kw, ok := rfc2253Keywords[oid]; ok {
				var s string
				if _, err := asn1.Unmarshal(atv.Value.FullBytes, &s); err == nil {
					b.WriteString(kw)
					b.WriteByte('=')
					b.WriteString(escapeDNValue(s))
					continue
				}
			}
			b.WriteString(oid)
			b.WriteString("=#")
			b.WriteString(hex.EncodeToString(atv.Value.FullBytes))
		}
	}
	return b.String(), nil
}

// escapeDNValue escapes a string value as Java's X500Principal does for
// RFC 2253 (so principals match Kafka's): a backslash before each of
// ,=+<>#;"\ wherever it stands (RFC 2253 section 2.4 asks for fewer and
// allows more), \00 for a NUL, and a backslash before each space or
// carriage return of a leading or trailing run.
func escapeDNValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == 0:
			b.WriteString(`\00`)
		default:
			b.WriteRune(r)
		}
	}
	esc := b.String()
	blank := func(c byte) bool { return c == ' ' || c == '\r' }
	lead := 0
	for lead < len(esc) && blank(esc[lead]) {
		lead++
	}
	trail := len(esc)
	for trail > lead && blank(esc[trail-1]) {
		trail--
	}
	if lead == 0 && trail == len(esc) {
		return esc
	}
	b.Reset()
	for i := 0; i < len(esc); i++ {
		if i < lead || i >= trail {
			b.WriteByte('\\')
		}
		b.WriteByte(esc[i])
	}
	return b.String()
}
