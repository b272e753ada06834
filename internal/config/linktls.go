package config

import (
	"fmt"

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
			TruststoreLocation: or("brokerd.raft.tls.truststore.location", "ssl.truststore.location"),
			ClientAuth:         tlsconf.ClientAuthRequired,
			PrincipalRules:     rules,
		}
		if rc.KeystoreLocation == "" || rc.TruststoreLocation == "" {
			s := c.settings["brokerd.raft.tls.enabled"]
			return badValue(s.Origin, s.Key, s.Value, fmt.Errorf("raft over mutual TLS needs a key store and a trust store: set brokerd.raft.tls.keystore.location and brokerd.raft.tls.truststore.location (or ssl.keystore.location and ssl.truststore.location)"))
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
