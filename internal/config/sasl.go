package config

import (
	"fmt"
	"strings"

	"github.com/brokerd/brokerd/broker/sasl"
	"github.com/brokerd/brokerd/internal/node"
)

// Upper bounds of the SASL durations: beyond them the millisecond values
// overflow a time.Duration (reauth) or hold failed connections, and their
// sockets, for no use (delay).
const (
	maxReauthMillis          = 365 * 24 * 3600 * 1000
	maxFailedAuthDelayMillis = 60 * 1000
)

func checkMechanisms(v string) error {
	_, err := sasl.ParseMechanisms(v)
	return err
}

func checkBootstrapUsers(v string) error {
	_, err := ParseBootstrapUsers(v)
	return err
}

// ParseBootstrapUsers reads brokerd.sasl.bootstrap.users,
// NAME:MECHANISM:PASSWORD,... Errors name the entry by position only:
// a password holding a comma splits into entries whose fields are
// fragments of it, so no field of a malformed entry is repeated.
func ParseBootstrapUsers(v string) ([]node.BootstrapUser, error) {
	var out []node.BootstrapUser
	for i, entry := range strings.Split(v, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		parts := strings.SplitN(entry, ":", 3)
		if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
			return nil, fmt.Errorf("entry %d: want NAME:MECHANISM:PASSWORD", i+1)
		}
		u := node.BootstrapUser{Name: strings.TrimSpace(parts[0]), Mechanism: strings.TrimSpace(parts[1]), Password: parts[2]}
		if u.Mechanism != sasl.ScramSHA256 && u.Mechanism != sasl.ScramSHA512 {
			return nil, fmt.Errorf("entry %d: mechanism: want SCRAM-SHA-256 or SCRAM-SHA-512 (a password with a comma splits its entry)", i+1)
		}
		out = append(out, u)
	}
	return out, nil
}

// sasl fills the SASL settings of cfg.
func (c *Config) sasl(cfg *node.Config) error {
	var err error
	if cfg.SASLMechanisms, err = sasl.ParseMechanisms(c.String("sasl.enabled.mechanisms")); err != nil {
		return badValue(c.settings["sasl.enabled.mechanisms"].Origin, "sasl.enabled.mechanisms", c.String("sasl.enabled.mechanisms"), err)
	}
	if cfg.SASLBootstrapUsers, err = ParseBootstrapUsers(c.String("brokerd.sasl.bootstrap.users")); err != nil {
		return badValue(c.settings["brokerd.sasl.bootstrap.users"].Origin, "brokerd.sasl.bootstrap.users", "", err)
	}
	cfg.Wire.SASLMaxReceiveBytes = int32(c.Int("sasl.server.max.receive.size"))
	cfg.Wire.ReauthAfter = c.millis("connections.max.reauth.ms")
	cfg.Wire.FailedAuthDelay = c.millis("connection.failed.authentication.delay.ms")
	if cfg.Wire.FailedAuthDelay == 0 {
		cfg.Wire.FailedAuthDelay = -1 // wire.Config: negative is "no delay"
	}
	return nil
}
