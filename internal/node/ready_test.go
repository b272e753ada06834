package node

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
)

func TestReadyRefusesWhileStartingAndDraining(t *testing.T) {
	n := &Node{}
	if err := n.ready(context.Background()); err == nil {
		t.Error("a node without a broker (recovering) is ready")
	}
	n.draining.Store(true)
	if err := n.ready(context.Background()); err == nil || err.Error() != "shutting down" {
		t.Errorf("draining node: %v", err)
	}
}

func TestDefaultAdvertised(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if got := defaultAdvertised("PLAINTEXT", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9092}, logger); got != "127.0.0.1:9092" {
		t.Errorf("loopback: %q", got)
	}
	host, _ := os.Hostname()
	for _, ip := range []net.IP{net.IPv4zero, net.IPv6unspecified} {
		got := defaultAdvertised("PLAINTEXT", &net.TCPAddr{IP: ip, Port: 9092}, logger)
		if h, p, _ := net.SplitHostPort(got); p != "9092" || h == "" || (host != "" && h != host) {
			t.Errorf("%v: advertised %q, want the host name %q", ip, got, host)
		}
	}
}
