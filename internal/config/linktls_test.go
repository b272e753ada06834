package config

import (
	"slices"
	"strings"
	"testing"
)

// TestRaftTLSTruststoreRequired: raft TLS does not fall back to
// ssl.truststore.location (the Kafka clients' CA: any client certificate
// would be a raft peer); brokerd.raft.tls.peer.principals is read.
func TestRaftTLSTruststoreRequired(t *testing.T) {
	load := func(body string) (string, []string) {
		t.Helper()
		c, err := Load(Sources{File: writeFile(t, "s.properties", body)})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := c.Node()
		if err != nil {
			return err.Error(), nil
		}
		if cfg.RaftTLS == nil {
			t.Fatal("raft TLS is off")
		}
		return "", cfg.RaftTLS.PeerPrincipals
	}
	base := "brokerd.raft.tls.enabled=true\nssl.keystore.location=/k.pem\nssl.truststore.location=/clients-ca.pem\n"
	if msg, _ := load(base); !strings.Contains(msg, "brokerd.raft.tls.truststore.location") {
		t.Fatalf("raft TLS with ssl.truststore.location only: %q, want an error naming brokerd.raft.tls.truststore.location", msg)
	}
	msg, peers := load(base + "brokerd.raft.tls.truststore.location=/nodes-ca.pem\nbrokerd.raft.tls.peer.principals=User:n1, n2 ,\n")
	if msg != "" || !slices.Equal(peers, []string{"User:n1", "n2"}) {
		t.Fatalf("got %q %q", msg, peers)
	}
}
