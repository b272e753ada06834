package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/internal/tlstest"
)

// seenRequest is what the handler saw of a Fetch.
type seenRequest struct {
	listener, principal string
	sendsFiles          bool
}

// TestTLSListener: a server with a plaintext and a TLS listener tells the
// handler which one each request came in on, with the client
// certificate's principal, and offers sendfile on the plaintext one only.
func TestTLSListener(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	srvCert := ca.Server("server", "broker")
	cliCert := ca.Client("client", pkix.Name{CommonName: "alice"})
	serverTLS := &tls.Config{
		Certificates: []tls.Certificate{srvCert.TLS},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    ca.Pool(),
	}
	principal := func(st *tls.ConnectionState) (string, error) {
		if len(st.PeerCertificates) == 0 {
			return AnonymousPrincipal, nil
		}
		return "User:CN=" + st.PeerCertificates[0].Subject.CommonName, nil
	}
	var mu sync.Mutex
	var seen []seenRequest
	h := func(_ context.Context, req *Request) (kmsg.Response, error) {
		mu.Lock()
		seen = append(seen, seenRequest{req.Listener, req.Principal, req.SendsFiles()})
		mu.Unlock()
		return req.Msg.ResponseKind(), nil
	}
	s := startServer(t, Config{Listeners: []Listener{
		{Name: "PLAIN", Addr: "127.0.0.1:0"},
		{Name: "SECURE", Addr: "127.0.0.1:0", TLS: serverTLS, Principal: principal},
	}}, nil, h)

	fetch := func(rc *rawConn) {
		t.Helper()
		req := versioned(kmsg.NewPtrFetchRequest(), 12)
		rc.sendFrames(frameOf(1, nil, req))
		rc.readResponse(int16(kmsg.Fetch), 12)
	}
	dialTLS := func(certs []tls.Certificate) *rawConn {
		t.Helper()
		nc, err := tls.DialWithDialer(&net.Dialer{Timeout: ioTimeout}, "tcp", s.ListenerAddr("SECURE").String(),
			&tls.Config{RootCAs: ca.Pool(), Certificates: certs, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nc.Close() })
		return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
	}
	if s.Addr().String() != s.ListenerAddr("PLAIN").String() {
		t.Fatalf("Addr %s is not the first listener's %s", s.Addr(), s.ListenerAddr("PLAIN"))
	}
	fetch(dialRaw(t, s.ListenerAddr("PLAIN")))
	fetch(dialTLS(nil))
	fetch(dialTLS([]tls.Certificate{cliCert.TLS}))

	want := []seenRequest{
		{"PLAIN", AnonymousPrincipal, canSendFile},
		{"SECURE", AnonymousPrincipal, false},
		{"SECURE", "User:CN=alice", false},
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != len(want) {
		t.Fatalf("seen %+v, want %+v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("request %d: seen %+v, want %+v", i, seen[i], want[i])
		}
	}
}

// TestTLSHandshakeRefused: a plaintext client on a TLS listener, and a
// principal function that refuses, close the connection before any
// request reaches the handler.
func TestTLSHandshakeRefused(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	srvCert := ca.Server("server", "broker")
	called := make(chan struct{}, 10)
	h := func(_ context.Context, req *Request) (kmsg.Response, error) {
		called <- struct{}{}
		return req.Msg.ResponseKind(), nil
	}
	refuse := func(*tls.ConnectionState) (string, error) { return "", errTestRefused }
	s := startServer(t, Config{Listeners: []Listener{
		{Name: "SSL", Addr: "127.0.0.1:0", TLS: &tls.Config{Certificates: []tls.Certificate{srvCert.TLS}}, Principal: refuse},
	}}, nil, h)
	rc := dialRaw(t, s.Addr())
	rc.sendFrames(frameOf(1, nil, versioned(kmsg.NewPtrMetadataRequest(), 1)))
	rc.expectClosed()

	nc, err := tls.Dial("tcp", s.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	if err == nil {
		tc := &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
		_ = nc.SetWriteDeadline(ioDeadline())
		_, _ = nc.Write(sized(frameOf(1, nil, versioned(kmsg.NewPtrMetadataRequest(), 1))))
		if _, err := tc.readFrame(); err == nil {
			t.Fatal("a refused principal got an answer")
		}
		nc.Close()
	}
	select {
	case <-called:
		t.Fatal("the handler saw a request of a refused connection")
	default:
	}
}

var errTestRefused = errors.New("refused by the test")

func ioDeadline() time.Time { return time.Now().Add(ioTimeout) }
