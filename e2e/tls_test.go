package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/internal/node"
	"github.com/brokerd/brokerd/internal/tlsconf"
	"github.com/brokerd/brokerd/internal/tlstest"
)

// tlsFixture is an in-test CA with a server certificate for 127.0.0.1 and
// a client certificate.
type tlsFixture struct {
	ca             *tlstest.CA
	server, client *tlstest.Pair
}

func newTLSFixture(t *testing.T) *tlsFixture {
	ca := tlstest.NewCA(t, t.TempDir())
	return &tlsFixture{
		ca:     ca,
		server: ca.Server("server", "broker-1"),
		client: ca.Client("client", pkix.Name{CommonName: "alice", Organization: []string{"acme"}}),
	}
}

// clientTLS is a client's TLS configuration trusting the test CA, with the
// client certificate if withCert.
func (f *tlsFixture) clientTLS(withCert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: f.ca.Pool()}
	if withCert {
		cfg.Certificates = []tls.Certificate{f.client.TLS}
	}
	return cfg
}

// startTLSNode starts a node with a PLAINTEXT and an SSL listener.
func startTLSNode(t *testing.T, f *tlsFixture, clientAuth string, tweak ...func(*node.Config)) *testNode {
	return startNode(t, append([]func(*node.Config){func(cfg *node.Config) {
		cfg.Listeners = []node.Listener{
			{Name: "PLAINTEXT", Protocol: node.ProtocolPlaintext, Addr: "127.0.0.1:0"},
			{Name: "SSL", Protocol: node.ProtocolSSL, Addr: "127.0.0.1:0"},
		}
		cfg.TLS = tlsconf.Config{KeystoreLocation: f.server.Keystore, TruststoreLocation: f.ca.CAFile, ClientAuth: clientAuth}
	}}, tweak...)...)
}

// produceConsume produces n records over cl's connection settings and
// reads them back.
func produceConsume(t *testing.T, addr, topic string, n int, opts ...kgo.Opt) {
	t.Helper()
	prod := newKgo(t, addr, append(opts, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())...)
	ctx := testCtx(t, 30*time.Second)
	for i := range n {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", topic, i))).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	cons := newKgo(t, addr, append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s: %d of %d records: %v", topic, got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consume %s: %v", topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("%s-%d", topic, got); string(r.Value) != want {
				t.Fatalf("record %d: %q, want %q", got, r.Value, want)
			}
			got++
		})
	}
}

// TestTLSProduceConsume: franz-go produces and consumes over the SSL
// listener with and without a client certificate (ssl.client.auth=
// requested); the plaintext listener goes on serving.
func TestTLSProduceConsume(t *testing.T) {
	f := newTLSFixture(t)
	n := startTLSNode(t, f, tlsconf.ClientAuthRequested)
	ssl := n.ListenerAddr("SSL")

	produceConsume(t, ssl, "tls-anonymous", 20, kgo.DialTLSConfig(f.clientTLS(false)))
	produceConsume(t, ssl, "tls-mutual", 20, kgo.DialTLSConfig(f.clientTLS(true)))
	produceConsume(t, n.ListenerAddr("PLAINTEXT"), "plain", 20)

	// A plaintext client on the SSL listener gets nowhere.
	plain := newKgo(t, ssl, kgo.RetryTimeout(time.Second), kgo.RequestRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := plain.Request(ctx, kmsg.NewPtrMetadataRequest()); err == nil {
		t.Error("a plaintext client was answered on the SSL listener")
	}
}

// TestTLSRequiredClientAuth: with ssl.client.auth=required, a client
// without a certificate is refused in the handshake; one with a
// certificate from the trust store is served.
func TestTLSRequiredClientAuth(t *testing.T) {
	f := newTLSFixture(t)
	// The connection's principal shows in the debug log.
	debugLogs := &logBuffer{}
	n := startTLSNode(t, f, tlsconf.ClientAuthRequired, func(cfg *node.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(debugLogs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	ssl := n.ListenerAddr("SSL")

	anon := newKgo(t, ssl, kgo.DialTLSConfig(f.clientTLS(false)), kgo.RequestRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := anon.Request(ctx, kmsg.NewPtrMetadataRequest()); err == nil {
		t.Fatal("a client without a certificate was served with ssl.client.auth=required")
	}
	// A certificate from another CA is refused too.
	other := tlstest.NewCA(t, t.TempDir()).Client("stranger", pkix.Name{CommonName: "mallory"})
	strange := f.clientTLS(false)
	strange.Certificates = []tls.Certificate{other.TLS}
	stranger := newKgo(t, ssl, kgo.DialTLSConfig(strange), kgo.RequestRetries(0))
	if _, err := stranger.Request(ctx, kmsg.NewPtrMetadataRequest()); err == nil {
		t.Fatal("a client certificate from an unknown CA was accepted")
	}
	produceConsume(t, ssl, "tls-required", 10, kgo.DialTLSConfig(f.clientTLS(true)))
	if want := `principal="User:CN=alice,O=acme"`; !strings.Contains(debugLogs.String(), want) {
		t.Errorf("no connection logged with %s", want)
	}
}

// TestTLSMetadataPerListener: Metadata (and FindCoordinator) give an SSL
// client the SSL listener's address and a plaintext client the PLAINTEXT
// one, on a node with both.
func TestTLSMetadataPerListener(t *testing.T) {
	f := newTLSFixture(t)
	n := startTLSNode(t, f, tlsconf.ClientAuthNone)
	for _, c := range []struct {
		listener string
		opts     []kgo.Opt
	}{
		{"PLAINTEXT", nil},
		{"SSL", []kgo.Opt{kgo.DialTLSConfig(f.clientTLS(false))}},
	} {
		addr := n.ListenerAddr(c.listener)
		_, portStr, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(portStr)
		cl := newKgo(t, addr, c.opts...)
		ctx := testCtx(t, 10*time.Second)
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("%s: Metadata: %v", c.listener, err)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].Host != "127.0.0.1" || resp.Brokers[0].Port != int32(port) {
			t.Errorf("%s client: Metadata brokers %+v, want 127.0.0.1:%d", c.listener, resp.Brokers, port)
		}
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = "g"
		fc.CoordinatorKeys = []string{"g"}
		fr, err := fc.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("%s: FindCoordinator: %v", c.listener, err)
		}
		if len(fr.Coordinators) != 1 || fr.Coordinators[0].Port != int32(port) {
			t.Errorf("%s client: coordinator %+v, want port %d", c.listener, fr.Coordinators, port)
		}
	}
}

// TestTLSStartErrors: an SSL or SASL_SSL listener whose key store is
// missing or broken stops start-up with a clear error.
func TestTLSStartErrors(t *testing.T) {
	f := newTLSFixture(t)
	for _, c := range []struct {
		name string
		tls  tlsconf.Config
		l    node.Listener
		want string
	}{
		{"no key store", tlsconf.Config{}, node.Listener{Name: "SSL", Protocol: node.ProtocolSSL}, "needs ssl.keystore.location"},
		{"missing key store", tlsconf.Config{KeystoreLocation: f.server.Keystore + ".gone"}, node.Listener{Name: "SSL", Protocol: node.ProtocolSSL}, "no such file"},
		{"certificate without key", tlsconf.Config{KeystoreLocation: f.server.CertFile}, node.Listener{Name: "SSL", Protocol: node.ProtocolSSL}, "no PEM private key"},
		{"SASL_SSL without a key store", tlsconf.Config{}, node.Listener{Name: "SASL_SSL", Protocol: "SASL_SSL"}, "needs ssl.keystore.location"},
	} {
		cfg := node.DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.AdminAddr, cfg.RaftAddr = "127.0.0.1:0", "127.0.0.1:0"
		c.l.Addr = "127.0.0.1:0"
		cfg.Listeners = []node.Listener{c.l}
		cfg.TLS = c.tls
		n, err := node.Start(context.Background(), cfg)
		if err == nil {
			n.Close()
			t.Errorf("%s: started", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestTLSNoSendfile: large fetches, which a plaintext connection gets with
// sendfile, reach an SSL consumer through the in-memory path (the bytes
// must be encrypted), intact.
func TestTLSNoSendfile(t *testing.T) {
	f := newTLSFixture(t)
	n := startTLSNode(t, f, tlsconf.ClientAuthNone)
	const topic, count = "tls-large", 300
	prod := newKgo(t, n.ListenerAddr("PLAINTEXT"), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := func(i int) string { return fmt.Sprintf("%06d:%s", i, strings.Repeat(string(rune('a'+i%26)), 4<<10)) }
	ctx := testCtx(t, 60*time.Second)
	var recs []*kgo.Record
	for i := range count {
		recs = append(recs, kgo.StringRecord(value(i)))
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	consume := func(addr string, opts ...kgo.Opt) int64 {
		before := wire.SentFromFiles()
		cl := newKgo(t, addr, append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		for got := 0; got < count; {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consume from %s: %d of %d: %v", addr, got, count, err)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consume: %v", err) })
			fs.EachRecord(func(r *kgo.Record) {
				if string(r.Value) != value(got) {
					t.Fatalf("record %d differs", got)
				}
				got++
			})
		}
		return wire.SentFromFiles() - before
	}
	if sent := consume(n.ListenerAddr("SSL"), kgo.DialTLSConfig(f.clientTLS(false))); sent != 0 {
		t.Errorf("SSL consumer: %d bytes sent with sendfile", sent)
	}
	sent := consume(n.ListenerAddr("PLAINTEXT"))
	t.Logf("plaintext consumer: %d bytes sent with sendfile", sent)
	if runtime.GOOS == "linux" && sent == 0 {
		t.Error("the plaintext consumer did not use sendfile: the test no longer shows that SSL avoids it")
	}
}

// kgoTLS are franz-go options dialling with the fixture's CA (and client
// certificate if withCert).
func kgoTLS(f *tlsFixture, withCert bool) []kgo.Opt {
	return []kgo.Opt{kgo.DialTLSConfig(f.clientTLS(withCert))}
}

// waitUntil polls cond until it holds or d passes.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTLSClusterListeners: in a three-node cluster with a PLAINTEXT and an
// SSL listener on each node, followers register both addresses through
// the leader, and any node gives an SSL client every broker's SSL address
// and a plaintext client every PLAINTEXT one; franz-go produces through
// the SSL addresses it was given.
func TestTLSClusterListeners(t *testing.T) {
	f := newTLSFixture(t)
	nodes := startCluster(t, 3, func(cfg *node.Config) {
		cfg.Listeners = []node.Listener{
			{Name: "PLAINTEXT", Protocol: node.ProtocolPlaintext, Addr: "127.0.0.1:0"},
			{Name: "SSL", Protocol: node.ProtocolSSL, Addr: "127.0.0.1:0"},
		}
		cfg.TLS = tlsconf.Config{KeystoreLocation: f.server.Keystore}
	})
	want := map[string]map[int32]string{"PLAINTEXT": {}, "SSL": {}}
	for i, n := range nodes {
		for l := range want {
			want[l][int32(i+1)] = n.ListenerAddr(l)
		}
	}
	for _, n := range nodes {
		for l, addrs := range want {
			var opts []kgo.Opt
			if l == "SSL" {
				opts = kgoTLS(f, false)
			}
			cl := newKgo(t, n.ListenerAddr(l), opts...)
			waitUntil(t, 20*time.Second, "every broker's "+l+" address in Metadata", func() bool {
				resp, err := kmsg.NewPtrMetadataRequest().RequestWith(testCtx(t, 5*time.Second), cl)
				if err != nil || len(resp.Brokers) != len(addrs) {
					return false
				}
				for _, b := range resp.Brokers {
					if net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))) != addrs[b.NodeID] {
						return false
					}
				}
				return true
			})
		}
	}
	produceConsume(t, nodes[1].ListenerAddr("SSL"), "cluster-tls", 10, kgoTLS(f, false)...)
}
