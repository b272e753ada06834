package raftstore

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/internal/tlsconf"
	"github.com/brokerd/brokerd/internal/tlstest"
)

// echoOne reads one byte from an accepted connection, writes it back and
// closes the connection: a peer whose connection is accepted reads its
// byte back, a refused one does not.
func echoOne(c net.Conn) {
	defer c.Close()
	b := make([]byte, 1)
	if _, err := c.Read(b); err == nil {
		_, _ = c.Write(b)
	}
}

// roundTrip writes a byte and reads it back.
func roundTrip(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte{7}); err != nil {
		return err
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		return err
	}
	if b[0] != 7 {
		return fmt.Errorf("read %d, want 7", b[0])
	}
	return nil
}

// echoNode is a TLS stream layer that echoes one byte per connection.
func echoNode(t *testing.T, s *tlsconf.Server) *streamLayer {
	t.Helper()
	l, err := newStreamLayer("127.0.0.1:0", nil, s, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
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

// attackerStream dials with a given certificate and verifies nothing.
type attackerStream struct {
	net.Listener
	cert tls.Certificate
}

func (a *attackerStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	return tls.DialWithDialer(d, "tcp", string(addr), &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{a.cert}})
}

// TestRaftRefusesKafkaClientCert: a certificate of the raft trust store's
// CA that is a Kafka client's (clientAuth only) is not a raft peer: its
// AppendEntries with a far higher term does not move a follower's term.
func TestRaftRefusesKafkaClientCert(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	c := newTestCluster(t, func(cfg *Config) {
		cfg.RaftTLS = raftTLS(t, ca, ca.CAFile, fmt.Sprintf("node%d", cfg.NodeID))
	})
	ld := c.leader()
	var fol *Store
	for _, s := range c.nodes {
		if s != ld {
			fol = s
			break
		}
	}
	client := ca.Client("kafka-client", pkix.Name{CommonName: "alice"})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tr := raft.NewNetworkTransport(&attackerStream{Listener: l, cert: client.TLS}, 1, 5*time.Second, io.Discard)
	defer tr.Close()
	before, _ := strconv.ParseUint(fol.raft.Stats()["term"], 10, 64)
	req := raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("666"), Addr: []byte("127.0.0.1:1")},
		Term: before + 1000}
	var resp raft.AppendEntriesResponse
	err = tr.AppendEntries(raft.ServerID(strconv.Itoa(int(fol.cfg.NodeID))), raft.ServerAddress(fol.RaftAddr()), &req, &resp)
	after, _ := strconv.ParseUint(fol.raft.Stats()["term"], 10, 64)
	if err == nil || after >= before+1000 {
		t.Fatalf("a Kafka client certificate was obeyed as a raft peer: rpc err %v, term %d -> %d", err, before, after)
	}
}

// TestStreamLayerPeerCertificates: on both sides of a raft connection the
// peer's certificate must allow server and client authentication, and
// map to one of the peer principals when they are set.
func TestStreamLayerPeerCertificates(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	node := echoNode(t, raftTLS(t, ca, ca.CAFile, "a"))
	dialRaw := func(p *tlstest.Pair) error {
		c, err := tls.Dial("tcp", node.Addr().String(), &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{p.TLS}})
		if err != nil {
			return err
		}
		defer c.Close()
		return roundTrip(c)
	}
	if err := dialRaw(ca.Node("b", "b")); err != nil {
		t.Fatalf("a node certificate: %v", err)
	}
	if err := dialRaw(ca.Client("client", pkix.Name{CommonName: "alice"})); err == nil {
		t.Fatal("a clientAuth-only certificate was accepted as a raft peer")
	}
	if err := dialRaw(ca.Server("web", "web")); err == nil {
		t.Fatal("a serverAuth-only certificate was accepted as a raft peer")
	}

	// The dialing side refuses a server whose certificate is not a node's.
	web := ca.Server("web2", "web2")
	wl, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{web.TLS}, ClientAuth: tls.RequestClientCert})
	if err != nil {
		t.Fatal(err)
	}
	defer wl.Close()
	go func() {
		for {
			c, err := wl.Accept()
			if err != nil {
				return
			}
			go echoOne(c)
		}
	}()
	dialer, err := newStreamLayer("127.0.0.1:0", nil, raftTLS(t, ca, ca.CAFile, "d"), testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer dialer.Close()
	if c, err := dialer.Dial(raft.ServerAddress(wl.Addr().String()), 5*time.Second); err == nil {
		c.Close()
		t.Fatal("dialed a serverAuth-only certificate as a raft peer")
	}

	// Peer principals: checked by the accepting and the dialing side.
	listed := func(name string) *tlsconf.Server {
		p := ca.Node(name, name)
		s, err := tlsconf.New(tlsconf.Config{KeystoreLocation: p.Keystore, TruststoreLocation: ca.CAFile, ClientAuth: tlsconf.ClientAuthRequired,
			PrincipalRules: `RULE:^CN=([^,]+)$/$1/`, PeerPrincipals: []string{"User:n1", "n2"}, Prefix: "brokerd.raft.tls."}, testLogger())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	n1 := echoNode(t, listed("n1"))
	dial := func(from *tlsconf.Server, to *streamLayer) error {
		l, err := newStreamLayer("127.0.0.1:0", nil, from, testLogger())
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		c, err := l.Dial(raft.ServerAddress(to.Addr().String()), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		return roundTrip(c)
	}
	if err := dial(listed("n2"), n1); err != nil {
		t.Fatalf("a listed peer: %v", err)
	}
	if err := dial(listed("n3"), n1); err == nil {
		t.Fatal("an unlisted peer (User:n3) was accepted")
	}
	if err := dial(listed("n1"), echoNode(t, listed("n3"))); !errors.Is(err, tlsconf.ErrNotPeer) {
		t.Fatalf("dialing an unlisted peer: %v, want %v", err, tlsconf.ErrNotPeer)
	}
}
