package broker

import (
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEveryAPIHasAnAuthRule: every advertised API says what it needs, and
// the table names nothing that is not served.
func TestEveryAPIHasAnAuthRule(t *testing.T) {
	for key := range supported {
		rule, ok := apiAuth[key]
		if !ok || rule.needs == "" {
			t.Errorf("%s (key %d) is served but has no authorization rule", kmsg.NameForKey(key), key)
		}
		if rule.check == nil && !rule.inHandler && rule.needs != "nothing" && key != int16(kmsg.DescribeCluster) {
			t.Errorf("%s needs %q but checks nothing", kmsg.NameForKey(key), rule.needs)
		}
	}
	for key := range apiAuth {
		if _, ok := supported[key]; !ok {
			t.Errorf("%s has a rule but is not served", kmsg.NameForKey(key))
		}
	}
}

func TestHostOf(t *testing.T) {
	if h := hostOf(&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 5}); h != "10.1.2.3" {
		t.Fatalf("host %q", h)
	}
	if h := hostOf(&net.TCPAddr{IP: net.ParseIP("::1"), Port: 5}); h != "0:0:0:0:0:0:0:1" {
		t.Fatalf("IPv6 host %q, want Kafka's 0:0:0:0:0:0:0:1", h)
	}
	if h := hostOf(nil); h != "" {
		t.Fatalf("nil addr: %q", h)
	}
}
