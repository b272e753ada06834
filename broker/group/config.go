package group

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Kafka's defaults for the group settings in Config.
const (
	// DefaultMinSessionTimeout is group.min.session.timeout.ms.
	DefaultMinSessionTimeout = 6 * time.Second
	// DefaultMaxSessionTimeout is group.max.session.timeout.ms.
	DefaultMaxSessionTimeout = 30 * time.Minute
)

// Config configures a Coordinator. Zero fields take the defaults above.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// member may ask for (group.min.session.timeout.ms,
	// group.max.session.timeout.ms); outside them JoinGroup answers
	// INVALID_SESSION_TIMEOUT.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long
	// the first rebalance of an empty group waits for more members, each
	// new member extending the wait by as much again, up to the rebalance
	// timeout. Zero means no delay.
	InitialRebalanceDelay time.Duration
	// Persist writes a group's membership record (record.go) durably, or
	// deletes it when record is nil, and then calls done: with nil once it
	// is durable, or with the error the group's members are to get. It
	// must not block, and must call done from another goroutine, in the
	// order the records were given for any one group. Nil: nothing is
	// written, and groups start over when the coordinator moves.
	Persist func(group string, record []byte, done func(*kerr.Error))
	// Clock is the time source; nil means SystemClock.
	Clock Clock
	// NewMemberID returns a fresh member id starting with prefix (the
	// client id, or the instance id of a static member); nil means
	// prefix-UUID, as Kafka makes them.
	NewMemberID func(prefix string) string
	Logger      *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if c.InitialRebalanceDelay < 0 {
		c.InitialRebalanceDelay = 0
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.NewMemberID == nil {
		c.NewMemberID = randomMemberID
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// randomMemberID is prefix-UUID (version 4).
func randomMemberID(prefix string) string {
	var u [16]byte
	rand.Read(u[:]) // never fails (crypto/rand panics rather than return an error)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
