package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/brokerd/brokerd/broker/sasl"
	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/internal/tlsconf"
	"github.com/brokerd/brokerd/raftstore"
)

// Security protocols, as Kafka's listener.security.protocol.map names them.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// Listener is one Kafka listener.
type Listener struct {
	// Name is the listener name (PLAINTEXT, SSL, CLIENT, ...); Metadata
	// answers a client with the addresses of the listener it came in on.
	Name string
	// Protocol is PLAINTEXT or SSL.
	Protocol string
	// Addr is the address to bind, host:port.
	Addr string
	// Advertised is what Metadata gives clients of this listener; empty:
	// the bound address (the host name when it binds every interface).
	Advertised string
}

// listeners are the Kafka listeners cfg asks for: Listeners, or one
// PLAINTEXT listener from KafkaAddr and AdvertisedAddr.
func (cfg *Config) listeners() []Listener {
	if len(cfg.Listeners) > 0 {
		return cfg.Listeners
	}
	return []Listener{{Name: wire.DefaultListenerName, Protocol: ProtocolPlaintext, Addr: cfg.KafkaAddr, Advertised: cfg.AdvertisedAddr}}
}

// wireListeners turns the listeners into the wire server's, reading the
// TLS key store when one of them is SSL or SASL_SSL (the returned server,
// else nil). SASL listeners authenticate with saslSrv.
func wireListeners(cfg *Config, saslSrv *sasl.Server) ([]wire.Listener, *tlsconf.Server, error) {
	var out []wire.Listener
	var tlsSrv *tlsconf.Server
	seen := map[string]bool{}
	for _, l := range cfg.listeners() {
		if l.Name == "" {
			return nil, nil, errors.New("a listener has no name")
		}
		if seen[l.Name] {
			return nil, nil, fmt.Errorf("listener %s given twice", l.Name)
		}
		seen[l.Name] = true
		wl := wire.Listener{Name: l.Name, Addr: l.Addr}
		switch l.Protocol {
		case ProtocolPlaintext:
		case ProtocolSSL, ProtocolSASLSSL:
			if tlsSrv == nil {
				var err error
				if tlsSrv, err = tlsconf.New(cfg.TLS, cfg.Logger.With("component", "tls")); err != nil {
					return nil, nil, fmt.Errorf("listener %s: %w", l.Name, err)
				}
			}
			wl.TLS = tlsSrv.TLSConfig()
			if l.Protocol == ProtocolSSL {
				wl.Principal = tlsSrv.Principal
			} else {
				// The principal comes from SASL, as in Kafka.
				wl.SASL = saslSrv
			}
		case ProtocolSASLPlaintext:
			wl.SASL = saslSrv
		default:
			return nil, nil, fmt.Errorf("listener %s: unknown security protocol %q (want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", l.Name, l.Protocol)
		}
		out = append(out, wl)
	}
	return out, tlsSrv, nil
}

// endpoints are the advertised addresses of the bound listeners, in the
// configured order.
func endpoints(cfg *Config, kafka *wire.Server, logger *slog.Logger) ([]raftstore.Endpoint, error) {
	var out []raftstore.Endpoint
	for _, l := range cfg.listeners() {
		adv := l.Advertised
		if adv == "" {
			adv = defaultAdvertised(l.Name, kafka.ListenerAddr(l.Name), logger)
		}
		host, portStr, err := net.SplitHostPort(adv)
		if err != nil {
			return nil, fmt.Errorf("listener %s: advertised address %q: %w", l.Name, adv, err)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil {
			return nil, fmt.Errorf("listener %s: advertised port %q: %w", l.Name, portStr, err)
		}
		out = append(out, raftstore.Endpoint{Listener: l.Name, Host: host, Port: int32(port)})
	}
	return out, nil
}

// ListenerAddr is the bound address of the Kafka listener called name, or
// "".
func (n *Node) ListenerAddr(name string) string {
	a := n.kafka.ListenerAddr(name)
	if a == nil {
		return ""
	}
	return a.String()
}
