package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/brokerd/brokerd/internal/node"
	"github.com/brokerd/brokerd/internal/tlsconf"
)

// defaultProtocolMap is Kafka's default listener.security.protocol.map.
const defaultProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

// protocols are Kafka's security protocols.
var protocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// listenerNameRE is what a listener name may be (Kafka normalises names to
// upper case).
var listenerNameRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// listenerAddr is one entry of listeners or advertised.listeners.
type listenerAddr struct {
	name, addr string
}

// parseListeners reads a Kafka listener list, NAME://host:port,...; a bare
// host:port is the PLAINTEXT listener, as brokerd has always read it. Names
// are upper-cased, as Kafka does.
func parseListeners(v string) ([]listenerAddr, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, errors.New("empty")
	}
	var out []listenerAddr
	names := map[string]bool{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		name, addr, ok := strings.Cut(item, "://")
		if !ok {
			name, addr = "PLAINTEXT", item
		}
		name = strings.ToUpper(strings.TrimSpace(name))
		if !listenerNameRE.MatchString(name) {
			return nil, fmt.Errorf("listener %q: a name is letters, digits and _, starting with a letter", name)
		}
		if names[name] {
			return nil, fmt.Errorf("listener %s given twice", name)
		}
		names[name] = true
		if _, _, err := splitHostPort(addr); err != nil {
			return nil, fmt.Errorf("listener %s: %w", name, err)
		}
		out = append(out, listenerAddr{name: name, addr: addr})
	}
	return out, nil
}

// checkListeners checks listeners: the syntax, and, as Kafka, no port
// bound by two listeners.
func checkListeners(v string) error {
	ls, err := parseListeners(v)
	if err != nil {
		return err
	}
	ports := map[int]string{}
	for _, l := range ls {
		_, port, _ := splitHostPort(l.addr)
		if other, ok := ports[port]; ok && port != 0 {
			return fmt.Errorf("listeners %s and %s both bind port %d", other, l.name, port)
		}
		ports[port] = l.name
	}
	return nil
}

// checkAdvertised accepts an empty value (advertise the bound listeners) or
// a listener list whose hosts clients can dial.
func checkAdvertised(v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	ls, err := parseListeners(v)
	if err != nil {
		return err
	}
	for _, l := range ls {
		if err := checkDialable(l.addr); err != nil {
			return fmt.Errorf("listener %s: %w", l.name, err)
		}
	}
	return nil
}

// parseProtocolMap reads listener.security.protocol.map, NAME:PROTOCOL,...
func parseProtocolMap(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(strings.TrimSpace(v), ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, proto, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("entry %q: want LISTENER_NAME:PROTOCOL", item)
		}
		name = strings.ToUpper(strings.TrimSpace(name))
		proto = strings.ToUpper(strings.TrimSpace(proto))
		if !listenerNameRE.MatchString(name) {
			return nil, fmt.Errorf("entry %q: a listener name is letters, digits and _, starting with a letter", item)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener %s mapped twice", name)
		}
		known := false
		for _, p := range protocols {
			known = known || p == proto
		}
		if !known {
			return nil, fmt.Errorf("entry %q: unknown security protocol %q (want %s)", item, proto, strings.Join(protocols, ", "))
		}
		out[name] = proto
	}
	if len(out) == 0 {
		return nil, errors.New("empty")
	}
	return out, nil
}

func checkProtocolMap(v string) error {
	_, err := parseProtocolMap(v)
	return err
}

func checkPrincipalRules(v string) error {
	_, err := tlsconf.ParseRules(v)
	return err
}

// listeners builds the node's listeners from listeners,
// advertised.listeners and listener.security.protocol.map, and its TLS
// settings from the ssl.* keys.
func (c *Config) listeners(cfg *node.Config) error {
	bad := func(key string, err error) error {
		s := c.settings[key]
		return badValue(s.Origin, key, s.Value, err)
	}
	ls, err := parseListeners(c.String("listeners"))
	if err != nil {
		return bad("listeners", err)
	}
	pmap, err := parseProtocolMap(c.String("listener.security.protocol.map"))
	if err != nil {
		return bad("listener.security.protocol.map", err)
	}
	adv := map[string]string{}
	if v := c.String("advertised.listeners"); v != "" {
		as, err := parseListeners(v)
		if err != nil {
			return bad("advertised.listeners", err)
		}
		for _, a := range as {
			adv[a.name] = a.addr
		}
	}
	names := map[string]bool{}
	var ssl []string
	for _, l := range ls {
		names[l.name] = true
		proto, ok := pmap[l.name]
		if !ok {
			return bad("listeners", fmt.Errorf("listener %s has no security protocol: add %s:PLAINTEXT or %s:SSL to listener.security.protocol.map", l.name, l.name, l.name))
		}
		switch proto {
		case node.ProtocolPlaintext, node.ProtocolSASLPlaintext:
		case node.ProtocolSSL, node.ProtocolSASLSSL:
			ssl = append(ssl, l.name)
		default:
			return bad("listeners", fmt.Errorf("listener %s uses unknown security protocol %s", l.name, proto))
		}
		cfg.Listeners = append(cfg.Listeners, node.Listener{Name: l.name, Protocol: proto, Addr: l.addr, Advertised: adv[l.name]})
	}
	for name := range adv {
		if !names[name] {
			return bad("advertised.listeners", fmt.Errorf("listener %s is not in listeners", name))
		}
	}
	cfg.KafkaAddr, cfg.AdvertisedAddr = cfg.Listeners[0].Addr, cfg.Listeners[0].Advertised
	cfg.TLS = tlsconf.Config{
		KeystoreLocation:   c.String("ssl.keystore.location"),
		TruststoreLocation: c.String("ssl.truststore.location"),
		ClientAuth:         c.String("ssl.client.auth"),
		PrincipalRules:     c.String("ssl.principal.mapping.rules"),
	}
	if len(ssl) > 0 && cfg.TLS.KeystoreLocation == "" {
		return bad("listeners", fmt.Errorf("listener %s uses SSL: set ssl.keystore.location to a PEM file holding the private key and the certificate chain", ssl[0]))
	}
	if len(ssl) > 0 && cfg.TLS.ClientAuth != tlsconf.ClientAuthNone && cfg.TLS.TruststoreLocation == "" {
		return bad("ssl.client.auth", fmt.Errorf("ssl.client.auth=%s: set ssl.truststore.location to a PEM bundle of the CAs that sign client certificates", cfg.TLS.ClientAuth))
	}
	return nil
}
