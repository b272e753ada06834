package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/brokerd/brokerd/raftstore"
)

func intRange(bits int, lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, bits)
		if err != nil {
			return fmt.Errorf("not a %d-bit integer", bits)
		}
		if n < lo || n > hi {
			if hi == 1<<(bits-1)-1 {
				return fmt.Errorf("must be at least %d", lo)
			}
			return fmt.Errorf("must be between %d and %d", lo, hi)
		}
		return nil
	}
}

// zeroOrRange is intRange that also accepts 0 (meaning: automatic).
func zeroOrRange(bits int, lo, hi int64) func(string) error {
	inRange := intRange(bits, lo, hi)
	return func(v string) error {
		if strings.TrimSpace(v) == "0" {
			return nil
		}
		if err := inRange(v); err != nil {
			return fmt.Errorf("%w (or 0 for automatic)", err)
		}
		return nil
	}
}

func checkBool(v string) error {
	_, err := parseBool(v)
	return err
}

// parseBool reads a boolean as Kafka does: true or false in any case.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("want true or false")
}

func oneOf(vals ...string) func(string) error {
	return func(v string) error {
		for _, w := range vals {
			if v == w {
				return nil
			}
		}
		return fmt.Errorf("want one of %s", strings.Join(vals, ", "))
	}
}

func checkDialable(addr string) error {
	host, port, err := splitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
		return fmt.Errorf("host %q cannot be dialled; advertise a name or address clients can reach", host)
	}
	if port == 0 {
		return errors.New("port 0 cannot be advertised")
	}
	return nil
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("want host:port: %w", err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: want 0-65535", p)
	}
	return host, int(port), nil
}

func checkHostPort(v string) error {
	_, _, err := splitHostPort(strings.TrimSpace(v))
	return err
}

func checkHostPortOrEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	return checkHostPort(v)
}

func checkAdvertisedHostPort(v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	return checkDialable(strings.TrimSpace(v))
}

func checkDir(v string) error {
	v = strings.TrimSpace(v)
	if v == "" {
		return errors.New("empty")
	}
	if strings.Contains(v, ",") {
		return errors.New("brokerd uses one data directory; give one path")
	}
	return nil
}

// ParsePeers reads a raft membership list: "1@host:port,2@host:port".
func ParsePeers(v string) ([]raftstore.Peer, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	var out []raftstore.Peer
	seen := map[int32]bool{}
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		id, addr, ok := strings.Cut(p, "@")
		if !ok || addr == "" {
			return nil, fmt.Errorf("entry %q: want id@host:port", p)
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("entry %q: node id must be a positive integer", p)
		}
		if seen[int32(n)] {
			return nil, fmt.Errorf("entry %q: node id %d listed twice", p, n)
		}
		seen[int32(n)] = true
		if err := checkDialable(addr); err != nil {
			return nil, fmt.Errorf("entry %q: %w", p, err)
		}
		out = append(out, raftstore.Peer{ID: int32(n), Addr: addr})
	}
	return out, nil
}

func checkPeers(v string) error {
	_, err := ParsePeers(v)
	return err
}

// checkSuperUsers accepts super.users: principals Type:name separated by
// semicolons.
func checkSuperUsers(v string) error {
	for _, p := range strings.Split(v, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
			return fmt.Errorf("principal %q is not of the form User:name", p)
		}
	}
	return nil
}
