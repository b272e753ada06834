package config

import (
	"fmt"
	"strings"

	"github.com/brokerd/brokerd/internal/node"
	"github.com/brokerd/brokerd/internal/tlsconf"
)

// linkTLS reads brokerd.raft.tls.* and brokerd.admin.tls.*: each key
// store and trust store defaults to the ssl.* one.
func (c *Config) linkTLS(cfg *node.Config) error {
	or := func(key, def string) string {
		if v := c.String(key); v != "" {
			return v
		}
		return c.String(def)
	}
	rules := c.String("ssl.principal.mapping.rules")
	if c.Bool("brokerd.raft.tls.enabled") {
		rc := tlsconf.Config{
			KeystoreLocation:   or("brokerd.raft.tls.keystore.location", "ssl.keystore.location"),
			TruststoreLocation: c.String("brokerd.raft.tls.truststore.location"),
			ClientAuth:         tlsconf.ClientAuthRequired,
			PrincipalRules:     rules,
			PeerPrincipals:     principalList(c.String("brokerd.raft.tls.peer.principals")),
		}
		if rc.KeystoreLocation == "" {
			s := c.settings["brokerd.raft.tls.enabled"]
			return badValue(s.Origin, s.Key, s.Value, fmt.Errorf("raft over mutual TLS needs a key store: set brokerd.raft.tls.keystore.location (or ssl.keystore.location)"))
		}
		if rc.TruststoreLocation == "" {
			// No fallback to ssl.truststore.location: the Kafka clients'
			// CA would make every client certificate a raft peer.
			s := c.settings["brokerd.raft.tls.enabled"]
			return badValue(s.Origin, s.Key, s.Value, fmt.Errorf("raft over mutual TLS needs brokerd.raft.tls.truststore.location: the CAs of the nodes' certificates only (ssl.truststore.location is not used for raft, since any certificate of its CAs would be a raft peer)"))
		}
		cfg.RaftTLS = &rc
	}
	if c.Bool("brokerd.admin.tls.enabled") {
		ac := tlsconf.Config{
			KeystoreLocation:   or("brokerd.admin.tls.keystore.location", "ssl.keystore.location"),
			TruststoreLocation: or("brokerd.admin.tls.truststore.location", "ssl.truststore.location"),
			ClientAuth:         c.String("brokerd.admin.tls.client.auth"),
			PrincipalRules:     rules,
		}
		if ac.ClientAuth == "" {
			ac.ClientAuth = tlsconf.ClientAuthNone
			if ac.TruststoreLocation != "" {
				ac.ClientAuth = tlsconf.ClientAuthRequested
			}
		}
		if ac.KeystoreLocation == "" {
			s := c.settings["brokerd.admin.tls.enabled"]
			return badValue(s.Origin, s.Key, s.Value, fmt.Errorf("set brokerd.admin.tls.keystore.location (or ssl.keystore.location) to a PEM file holding the private key and the certificate chain"))
		}
		if ac.ClientAuth != tlsconf.ClientAuthNone && ac.TruststoreLocation == "" {
			s := c.settings["brokerd.admin.tls.client.auth"]
			return badValue(s.Origin, s.Key, s.Value, fmt.Errorf("client certificates need brokerd.admin.tls.truststore.location (or ssl.truststore.location)"))
		}
		cfg.AdminTLS = &ac
	}
	return nil
}

// principalList splits a comma-separated list of principals.
func principalList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
