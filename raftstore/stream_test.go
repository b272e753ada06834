package raftstore

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/internal/tlsconf"
	"github.com/brokerd/brokerd/internal/tlstest"
)

// syncBuffer collects log output written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// raftTLS is a node's raft TLS configuration with a certificate of ca.
func raftTLS(t *testing.T, ca *tlstest.CA, trust string, name string) *tlsconf.Server {
	t.Helper()
	p := ca.Node(name, name)
	s, err := tlsconf.New(tlsconf.Config{KeystoreLocation: p.Keystore, TruststoreLocation: trust,
		ClientAuth: tlsconf.ClientAuthRequired, Prefix: "brokerd.raft.tls."}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRaftMutualTLS: three nodes whose raft runs over mutual TLS elect a
// leader and replicate; a fourth configuration, a node whose certificate
// comes from another CA, is refused by the others, which say why.
func TestRaftMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	otherDir := t.TempDir()
	other := tlstest.NewCA(t, otherDir)
	var logs syncBuffer
	c := newTestCluster(t, func(cfg *Config) {
		name := fmt.Sprintf("node%d", cfg.NodeID)
		if cfg.NodeID == 3 {
			// Trusts the cluster's CA, but holds another CA's certificate.
			cfg.RaftTLS = raftTLS(t, other, ca.CAFile, name)
			return
		}
		cfg.RaftTLS = raftTLS(t, ca, ca.CAFile, name)
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ld := c.leader()
	if ld == c.nodes[2] {
		t.Fatal("the node with a foreign certificate leads")
	}
	ctx := context.Background()
	if err := ld.CreateTopic(ctx, "tls", [16]byte{1}, 1, nil); err != nil {
		t.Fatal(err)
	}
	want := ld.AppliedIndex()
	deadline := time.Now().Add(10 * time.Second)
	for c.nodes[0].AppliedIndex() < want || c.nodes[1].AppliedIndex() < want {
		if time.Now().After(deadline) {
			t.Fatalf("not replicated: applied %d and %d, want %d", c.nodes[0].AppliedIndex(), c.nodes[1].AppliedIndex(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for !strings.Contains(logs.String(), "not signed by a CA of brokerd.raft.tls.truststore.location") {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal of the foreign certificate logged:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := c.nodes[2].AppliedIndex(); got >= want {
		t.Fatalf("the node with a foreign certificate applied %d (the topic at %d)", got, want)
	}
}

// TestStreamLayerRefusals: a TLS node refuses a plaintext peer and a peer
// without a trusted certificate, and a plaintext node recognizes a TLS
// peer; each says so in its log.
func TestStreamLayerRefusals(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	other := tlstest.NewCA(t, t.TempDir())
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	listen := func(s *tlsconf.Server) *streamLayer {
		l, err := newStreamLayer("127.0.0.1:0", nil, s, logger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		// Accept and read, as raft's transport does.
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go echoOne(c)
			}
		}()
		return l
	}
	good := raftTLS(t, ca, ca.CAFile, "a")
	tlsNode := listen(good)
	plainNode := listen(nil)
	addr := func(l *streamLayer) raft.ServerAddress { return raft.ServerAddress(l.Addr().String()) }

	// A TLS peer dialing a TLS node: accepted.
	conn, err := listen(raftTLS(t, ca, ca.CAFile, "b")).Dial(addr(tlsNode), 5*time.Second)
	if err != nil {
		t.Fatalf("a trusted peer: %v", err)
	}
	if err := roundTrip(conn); err != nil {
		t.Fatalf("a trusted peer's byte is not echoed: %v", err)
	}
	conn.Close()
	// A peer with a foreign certificate is refused (under TLS 1.3 the
	// dialer learns it at its first read).
	if c, err := listen(raftTLS(t, other, ca.CAFile, "c")).Dial(addr(tlsNode), 5*time.Second); err == nil {
		if err := roundTrip(c); err == nil {
			t.Fatal("a peer with another CA's certificate was accepted")
		}
		c.Close()
	}
	// A TLS node dialing a server of another CA refuses it.
	if _, err := listen(raftTLS(t, ca, ca.CAFile, "d")).Dial(addr(listen(raftTLS(t, other, other.CAFile, "e"))), 5*time.Second); err == nil ||
		!strings.Contains(err.Error(), "not signed by a CA of brokerd.raft.tls.truststore.location") {
		t.Fatalf("a server of another CA: %v", err)
	}
	// A plaintext peer dialing a TLS node.
	pc, err := net.Dial("tcp", tlsNode.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = pc.Write([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	_, _ = pc.Read(make([]byte, 64))
	pc.Close()
	// A TLS node dialing a plaintext node.
	if _, err := listen(raftTLS(t, ca, ca.CAFile, "f")).Dial(addr(plainNode), 2*time.Second); err == nil {
		t.Fatal("a TLS handshake with a plaintext node succeeded")
	}
	for _, want := range []string{
		"the peer speaks plaintext raft; set brokerd.raft.tls.enabled=true",
		"the peer runs raft over TLS; set brokerd.raft.tls.enabled=true",
		"the peer's certificate is not signed by a CA of brokerd.raft.tls.truststore.location",
	} {
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(logs.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("log lacks %q:\n%s", want, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
