package node

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type kmsgResponse = kmsg.Response

// startAdmin serves the admin HTTP endpoints: liveness, readiness and
// pprof (on this listener only).
func (n *Node) startAdmin() error {
	l, err := net.Listen("tcp", n.cfg.AdminAddr)
	if err != nil {
		return fmt.Errorf("admin listener on %s: %w", n.cfg.AdminAddr, err)
	}
	n.adminL = l
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := n.ready(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	n.admin = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { n.serveErr <- n.admin.Serve(l) }()
	return nil
}

// ready is true once logs are recovered (Open returned), a raft leader is
// known, and the Kafka listener is bound.
func (n *Node) ready(ctx context.Context) error {
	if n.broker == nil {
		return fmt.Errorf("recovering")
	}
	if _, ok := n.store.Leader(); !ok {
		return fmt.Errorf("no raft leader known")
	}
	if n.kafka.Addr() == nil {
		return fmt.Errorf("kafka listener not bound")
	}
	return nil
}
