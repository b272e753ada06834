package node

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/brokerd/brokerd/internal/tlsconf"
)

// linkTLS reads the TLS configurations of the links between nodes: raft
// (mutual TLS, client certificates required) and the admin API; nil for
// one that is off.
func linkTLS(cfg *Config) (raftTLS, adminTLS *tlsconf.Server, err error) {
	if cfg.RaftTLS != nil {
		rc := *cfg.RaftTLS
		rc.ClientAuth, rc.Prefix = tlsconf.ClientAuthRequired, "brokerd.raft.tls."
		if raftTLS, err = tlsconf.New(rc, cfg.Logger.With("component", "raft-tls")); err != nil {
			return nil, nil, fmt.Errorf("raft TLS: %w", err)
		}
		if err := raftTLS.CheckNodeCertificate(); err != nil {
			return nil, nil, fmt.Errorf("raft TLS: %w", err)
		}
	}
	if cfg.AdminTLS != nil {
		ac := *cfg.AdminTLS
		ac.Prefix = "brokerd.admin.tls."
		if adminTLS, err = tlsconf.New(ac, cfg.Logger.With("component", "admin-tls")); err != nil {
			return nil, nil, fmt.Errorf("admin TLS: %w", err)
		}
	}
	warnUnauthenticatedLinks(cfg, cfg.Logger)
	return raftTLS, adminTLS, nil
}

// warnUnauthenticatedLinks warns when the admin API authorizes requests
// in a cluster whose nodes have no client certificate to call each other's
// admin API with: registration, removal checks, snapshot deduplication
// and forwarding to the leader would then be refused.
func warnUnauthenticatedLinks(cfg *Config, logger *slog.Logger) {
	cluster := len(cfg.Peers) > 1 || cfg.Join != ""
	if !cfg.Authorizer.Enabled || cfg.AdminAddr == "" || !cluster {
		return
	}
	if cfg.AdminTLS == nil || cfg.AdminTLS.ClientAuth == tlsconf.ClientAuthNone || cfg.AdminTLS.ClientAuth == "" {
		logger.Warn("the admin API authorizes requests, but the nodes present no client certificate to each other's admin API: " +
			"set brokerd.admin.tls.enabled=true with brokerd.admin.tls.client.auth=requested, and give the nodes' principal ClusterAction and Alter on the cluster (or list it in super.users); or grant User:ANONYMOUS ClusterAction, Describe and Alter on the cluster (then anyone reaching the admin listener has them)")
	}
}

// ReloadTLS reads the key stores and trust stores again (on SIGHUP): the
// SSL listeners', raft's and the admin API's. New connections get the new
// certificates; on an error the old ones stay.
func (n *Node) ReloadTLS() error {
	var errs []error
	for _, s := range []*tlsconf.Server{n.tls, n.raftTLS, n.adminTLS} {
		if s != nil {
			errs = append(errs, s.Reload())
		}
	}
	return errors.Join(errs...)
}
