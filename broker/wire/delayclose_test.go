package wire

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/brokerd/brokerd/internal/tlstest"
)

// TestDelayedCloserTLSDoesNotStall: TLS connections whose clients do not
// read are closed one after another without waiting on each. It failed
// when the closer ran tls.Conn.Close, whose close_notify waited 5 s per
// connection.
func TestDelayedCloserTLSDoesNotStall(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	cert := ca.Server("server", "broker")
	var d delayedCloser
	start := time.Now()
	for range 2 {
		a, b := net.Pipe() // unbuffered: a write blocks until read
		t.Cleanup(func() { _ = b.Close() })
		srv := tls.Server(a, &tls.Config{Certificates: []tls.Certificate{cert.TLS}})
		cli := tls.Client(b, &tls.Config{InsecureSkipVerify: true})
		errc := make(chan error, 1)
		go func() { errc <- cli.Handshake() }()
		if err := srv.Handshake(); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		d.add(srv, []byte("failframe"), 10*time.Millisecond)
	}
	waitFor(t, "the closer idle", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return !d.running
	})
	if took := time.Since(start); took > time.Second {
		t.Fatalf("two TLS connections took %v to close", took)
	}
}
