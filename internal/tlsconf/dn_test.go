package tlsconf

import (
	"encoding/asn1"
	"testing"
)

func TestRFC2253(t *testing.T) {
	str := func(tag int, s string) asn1.RawValue {
		full, err := asn1.Marshal(asn1.RawValue{Tag: tag, Bytes: []byte(s)})
		if err != nil {
			t.Fatal(err)
		}
		return asn1.RawValue{FullBytes: full}
	}
	dc := asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	email := asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	serial := asn1.ObjectIdentifier{2, 5, 4, 5}
	cn := asn1.ObjectIdentifier{2, 5, 4, 3}
	ou := asn1.ObjectIdentifier{2, 5, 4, 11}
	der, err := asn1.Marshal([]rawRDNSET{
		{{Type: dc, Value: str(asn1.TagIA5String, "com")}},
		{{Type: dc, Value: str(asn1.TagIA5String, "acme")}},
		{{Type: ou, Value: str(asn1.TagPrintableString, "eng")}, {Type: serial, Value: str(asn1.TagPrintableString, "42")}},
		{{Type: cn, Value: str(asn1.TagUTF8String, "Smith, Jo ")}},
		{{Type: email, Value: str(asn1.TagIA5String, "jo@acme.com")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// As Java's X500Principal.getName(RFC2253): DC by keyword, SERIALNUMBER
	// and emailAddress as OIDs with their DER, tag included, in hex (Go's
	// pkix String differs on all three); a multi-valued RDN in its DER order
	// (sorted, as DER sorts a SET OF).
	want := `1.2.840.113549.1.9.1=#160b6a6f4061636d652e636f6d,CN=Smith\, Jo\ ,2.5.4.5=#13023432+OU=eng,DC=acme,DC=com`
	got, err := rfc2253(der)
	if err != nil || got != want {
		t.Errorf("got  %s (%v)\nwant %s", got, err, want)
	}
}

// Values escaped as Java's X500Principal.getName(RFC2253) escapes them.
func TestEscapeDNValueAsJava(t *testing.T) {
	for in, want := range map[string]string{
		"plain":       "plain",
		"a=b":         `a\=b`,
		"#lead":       `\#lead`,
		"mid#dle":     `mid\#dle`,
		`q"b\s`:       `q\"b\\s`,
		"a,b+c<d>e;f": `a\,b\+c\<d\>e\;f`,
		"nul\x00":     `nul\00`,
		"  two lead":  `\ \ two lead`,
		"trail  ":     `trail\ \ `,
		" ":           `\ `,
		"in  side":    "in  side",
		"\rcr":        "\\\rcr",
	} {
		if got := escapeDNValue(in); got != want {
			t.Errorf("escape %q: %q, want %q", in, got, want)
		}
	}
}
