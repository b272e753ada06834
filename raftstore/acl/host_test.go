package acl

import (
	"net"
	"testing"
)

// TestCanonicalHost: Java's InetAddress.getHostAddress forms, what Kafka
// compares an ACL's host with.
func TestCanonicalHost(t *testing.T) {
	for in, want := range map[string]string{
		"*":                    "*",
		"10.0.0.1":             "10.0.0.1",
		"::1":                  "0:0:0:0:0:0:0:1",
		"0:0:0:0:0:0:0:1":      "0:0:0:0:0:0:0:1",
		"2001:DB8::0001":       "2001:db8:0:0:0:0:0:1",
		"fe80::1%eth0":         "fe80:0:0:0:0:0:0:1%eth0",
		"::ffff:10.1.2.3":      "10.1.2.3",
		"::":                   "0:0:0:0:0:0:0:0",
		"broker.example.com":   "broker.example.com",
		"2001:db8:0:1:0:0:0:2": "2001:db8:0:1:0:0:0:2",
	} {
		if got := CanonicalHost(in); got != want {
			t.Errorf("CanonicalHost(%q) = %q, want %q", in, got, want)
		}
	}
	if got := CanonicalIP(net.ParseIP("::1"), ""); got != "0:0:0:0:0:0:0:1" {
		t.Errorf("CanonicalIP(::1) = %q", got)
	}
	if got := CanonicalIP(net.ParseIP("10.0.0.9"), ""); got != "10.0.0.9" {
		t.Errorf("CanonicalIP(10.0.0.9) = %q (a 16-byte IPv4)", got)
	}
}
