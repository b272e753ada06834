package wire

import (
	"bytes"
	"crypto/tls"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/internal/tlstest"
)

// tcpPair returns the two ends of a TCP connection on 127.0.0.1, closed
// when the test ends.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// TestSendFile: on a TCP connection, records left in files go out with
// sendfile between the writev'd parts, and the client reads exactly what
// kmsg encodes.
func TestSendFile(t *testing.T) {
	if !canSendFile {
		t.Skip("no sendfile on this platform")
	}
	client, server := tcpPair(t)
	rc := sendFileConn(server)
	if rc == nil {
		t.Fatal("a TCP connection does not take sendfile")
	}
	writeFetches(t, client, responseWriter{nc: server, rc: rc, timeout: 10 * time.Second, onWrite: func() {}}, true)
}

// TestTLSFetchWrite: on a TLS connection the same responses, their
// referenced records read from the files and gathered into TLS records,
// reach the client exactly as kmsg encodes them.
func TestTLSFetchWrite(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	cert := ca.Server("server", "broker")
	rawClient, rawServer := tcpPair(t)
	server := tls.Server(rawServer, &tls.Config{Certificates: []tls.Certificate{cert.TLS}})
	client := tls.Client(rawClient, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	if sendFileConn(server) != nil {
		t.Fatal("a TLS connection takes sendfile")
	}
	writeFetches(t, client, responseWriter{nc: server, coalesce: true, timeout: 10 * time.Second, onWrite: func() {}}, false)
}

// writeFetches writes random Fetch responses, their large records left in
// files, through w, and checks that the client reads exactly what kmsg
// encodes.
func writeFetches(t *testing.T, client net.Conn, w responseWriter, sendfile bool) {
	server := w.nc
	before := SentFromFiles()
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(client)
		got <- b
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	var want []byte
	sent := 0
	for i := range 200 {
		resp := randomFetch(rng, int16(4+rng.IntN(13)))
		want = AppendResponse(want, int32(i), int16(kmsg.Fetch), resp)
		files := moveToFiles(t, rng, resp)
		for _, f := range files {
			sent += f.Len
		}
		if err := w.append(int32(i), int16(kmsg.Fetch), resp, files); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	server.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the client read %d bytes that differ from kmsg's %d", len(b), len(want))
	}
	if sent == 0 {
		t.Fatal("no records went out of a file")
	}
	if sendfile != (SentFromFiles() > before) {
		t.Fatalf("sendfile used: %v, want %v", SentFromFiles() > before, sendfile)
	}
}

// TestSendFileShortFile: a file shorter than its range fails the write
// (the connection then closes) rather than sending a short frame.
func TestSendFileShortFile(t *testing.T) {
	if !canSendFile {
		t.Skip("no sendfile on this platform")
	}
	client, server := tcpPair(t)
	go io.Copy(io.Discard, client)
	f, err := os.CreateTemp(t.TempDir(), "records")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte{1}, 3*minRefBytes)); err != nil {
		t.Fatal(err)
	}
	resp := fetchWith(12, nil)
	files := []FileRecords{{File: f, Len: 3*minRefBytes + 10}}
	w := responseWriter{nc: server, rc: sendFileConn(server), timeout: 10 * time.Second, onWrite: func() {}}
	if err := w.append(1, int16(kmsg.Fetch), resp, files); err != nil {
		t.Fatal(err)
	}
	if err := w.flush(); err == nil {
		t.Fatal("a short file was sent without an error")
	}
}
