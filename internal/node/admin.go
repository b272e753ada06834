package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type kmsgResponse = kmsg.Response

// startAdmin serves the admin HTTP endpoints: Prometheus metrics,
// liveness, readiness and pprof (on this listener only).
func (n *Node) startAdmin() error {
	l := n.adminL
	if n.adminTLS != nil {
		l = tls.NewListener(l, n.adminTLS.TLSConfig())
	}
	mux := guardedMux{ServeMux: http.NewServeMux(), auth: n.newAdminAuth(), needs: n.adminNeeds()}
	n.clusterRoutes(mux)
	n.processorRoutes(mux)
	mux.Handle("/metrics", n.metrics.Handler())
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
	n.admin = &http.Server{Handler: mux, ErrorLog: slog.NewLogLogger(n.logger.With("component", "admin").Handler(), slog.LevelWarn), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := n.admin.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.serveErr <- fmt.Errorf("admin listener: %w", err)
		}
	}()
	return nil
}

// ready is true once logs are recovered (Open returned), a raft leader is
// known, and the Kafka listener is bound and accepting; false again once
// shutdown has begun, while the disk is too full to take writes, and for
// good once the node has stopped applying after a storage error.
func (n *Node) ready(ctx context.Context) error {
	if n.draining.Load() {
		return fmt.Errorf("shutting down")
	}
	if n.broker == nil {
		return fmt.Errorf("recovering")
	}
	if err := n.store.FailErr(); err != nil {
		return fmt.Errorf("failed: %w", err)
	}
	if err := n.store.StorageErr(); err != nil {
		return err
	}
	if _, ok := n.store.Leader(); !ok {
		return fmt.Errorf("no raft leader known")
	}
	if n.kafka.Addr() == nil || !n.serving.Load() {
		return fmt.Errorf("kafka listener not serving yet")
	}
	return nil
}
