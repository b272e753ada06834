package raftstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
)

// SCRAM mechanisms whose credentials the state holds (Kafka's names).
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Bounds of a SCRAM credential, checked in apply (Kafka's iteration range).
const (
	MinScramIterations  = 4096
	MaxScramIterations  = 16384
	MaxScramUserBytes   = 1024
	MaxScramSaltBytes   = 1024
	maxScramOpsPerAlter = 10000
)

// Errors of SCRAM credential commands.
var (
	// ErrUnknownScramCredential: a deletion named a user and mechanism
	// without a credential (RESOURCE_NOT_FOUND).
	ErrUnknownScramCredential = errors.New("attempt to delete a user credential that does not exist")
	// ErrUnsupportedScramMechanism: not SCRAM-SHA-256 or SCRAM-SHA-512
	// (UNSUPPORTED_SASL_MECHANISM).
	ErrUnsupportedScramMechanism = errors.New("unknown SCRAM mechanism")
	// ErrUnacceptableCredential: an empty or oversized user name, too few
	// or too many iterations, a bad salt or key (UNACCEPTABLE_CREDENTIAL).
	ErrUnacceptableCredential = errors.New("unacceptable credential")
	// ErrScramCredentialExists answers an if-absent upsert (bootstrap
	// users) of a credential that is already there; it is left alone.
	ErrScramCredentialExists = errors.New("credential already exists")
)

// ScramCredential is one user's stored credential for one mechanism: what
// RFC 5802 has a server keep, never the password.
type ScramCredential struct {
	User       string `json:"user"`
	Mechanism  string `json:"mechanism"`
	Salt       []byte `json:"salt"`
	Iterations int32  `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// ScramKey names a credential.
type ScramKey struct {
	User      string `json:"user"`
	Mechanism string `json:"mechanism"`
}

func (c *ScramCredential) key() ScramKey { return ScramKey{User: c.User, Mechanism: c.Mechanism} }

// scramStoreKey is the credential's key in the state DB.
func (k ScramKey) storeKey() []byte { return []byte(k.User + "\x00" + k.Mechanism) }

// scramAlterCmd upserts and deletes credentials. With IfAbsent an upsert
// of a credential that exists is skipped (ErrScramCredentialExists).
type scramAlterCmd struct {
	Upserts  []ScramCredential `json:"upserts,omitempty"`
	Deletes  []ScramKey        `json:"deletes,omitempty"`
	IfAbsent bool              `json:"if_absent,omitempty"`
	// Bootstrap (with IfAbsent) marks each upsert's credential as
	// bootstrapped, and skips one already marked (scram_bootstrap.go).
	Bootstrap bool `json:"bootstrap,omitempty"`
}

// ScramKeySize is the StoredKey and ServerKey length of a mechanism, 0 for
// an unknown one.
func ScramKeySize(mechanism string) int {
	switch mechanism {
	case ScramSHA256:
		return 32
	case ScramSHA512:
		return 64
	}
	return 0
}

// checkScramName validates a user name and mechanism.
func checkScramName(user, mechanism string) error {
	switch {
	case user == "":
		return fmt.Errorf("%w: user name must not be empty", ErrUnacceptableCredential)
	case len(user) > MaxScramUserBytes:
		return fmt.Errorf("%w: user name of %d bytes, above %d", ErrUnacceptableCredential, len(user), MaxScramUserBytes)
	case ScramKeySize(mechanism) == 0:
		return fmt.Errorf("%w: %q", ErrUnsupportedScramMechanism, mechanism)
	}
	return nil
}

// CheckScramCredential validates a credential as apply does.
func CheckScramCredential(c *ScramCredential) error {
	if err := checkScramName(c.User, c.Mechanism); err != nil {
		return err
	}
	size := ScramKeySize(c.Mechanism)
	switch {
	case c.Iterations < MinScramIterations:
		return fmt.Errorf("%w: too few iterations (%d, at least %d)", ErrUnacceptableCredential, c.Iterations, MinScramIterations)
	case c.Iterations > MaxScramIterations:
		return fmt.Errorf("%w: too many iterations (%d, at most %d)", ErrUnacceptableCredential, c.Iterations, MaxScramIterations)
	case len(c.Salt) == 0 || len(c.Salt) > MaxScramSaltBytes:
		return fmt.Errorf("%w: salt of %d bytes (want 1 to %d)", ErrUnacceptableCredential, len(c.Salt), MaxScramSaltBytes)
	case len(c.StoredKey) != size || len(c.ServerKey) != size:
		return fmt.Errorf("%w: %s keys must be %d bytes", ErrUnacceptableCredential, c.Mechanism, size)
	}
	return nil
}

// applyScramAlter applies upserts, then deletions; it returns one error
// (or nil) per upsert, then per deletion.
func (f *fsm) applyScramAlter(c *scramAlterCmd) any {
	if len(c.Upserts)+len(c.Deletes) > maxScramOpsPerAlter {
		return fmt.Errorf("%w: %d credential changes in one command, above %d", ErrInvalidCommand, len(c.Upserts)+len(c.Deletes), maxScramOpsPerAlter)
	}
	out := make([]error, 0, len(c.Upserts)+len(c.Deletes))
	f.mu.Lock()
	defer f.mu.Unlock()
	usage := usageOf(f.scram)
	for i := range c.Upserts {
		u := c.Upserts[i]
		if err := CheckScramCredential(&u); err != nil {
			out = append(out, err)
			continue
		}
		k := u.key()
		prev, exists := f.scram[k]
		if c.Bootstrap && f.scramBoot[k] {
			out = append(out, ErrScramBootstrapped)
			continue
		}
		var old *ScramCredential
		if exists {
			old = &prev
		}
		var err error
		switch {
		case exists && c.IfAbsent:
			err = ErrScramCredentialExists
		default:
			err = usage.admit(&u, old)
		}
		if errors.Is(err, ErrScramLimit) {
			out = append(out, err)
			continue
		}
		if c.Bootstrap {
			if merr := f.markBootstrapped(k); merr != nil {
				out = append(out, merr)
				continue
			}
		}
		if err != nil {
			out = append(out, err)
			continue
		}
		f.scram[k] = u
		f.dirty.scram[k] = true
		out = append(out, nil)
	}
	for _, d := range c.Deletes {
		if err := checkScramName(d.User, d.Mechanism); err != nil {
			out = append(out, err)
			continue
		}
		prev, ok := f.scram[d]
		if !ok {
			out = append(out, ErrUnknownScramCredential)
			continue
		}
		usage.remove(&prev)
		delete(f.scram, d)
		f.dirty.scram[d] = true
		out = append(out, nil)
	}
	return out
}

// AlterScram upserts and deletes SCRAM credentials through raft. It
// returns one error (or nil) per upsert, then per deletion. With ifAbsent
// an existing credential is left as it is (ErrScramCredentialExists).
func (s *Store) AlterScram(ctx context.Context, upserts []ScramCredential, deletes []ScramKey, ifAbsent bool) ([]error, error) {
	return proposeFor[[]error](ctx, s, cmdScramAlter, scramAlterCmd{Upserts: upserts, Deletes: deletes, IfAbsent: ifAbsent})
}

// ScramCredential returns a user's credential for a mechanism, as this
// node has applied it.
func (s *Store) ScramCredential(user, mechanism string) (ScramCredential, bool) {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	c, ok := s.fsm.scram[ScramKey{User: user, Mechanism: mechanism}]
	return c, ok
}

// ScramCredentials returns every credential, by user then mechanism.
func (s *Store) ScramCredentials() []ScramCredential {
	s.fsm.mu.RLock()
	out := make([]ScramCredential, 0, len(s.fsm.scram))
	for _, c := range s.fsm.scram {
		out = append(out, c)
	}
	s.fsm.mu.RUnlock()
	sortScram(out)
	return out
}

func sortScram(cs []ScramCredential) {
	slices.SortFunc(cs, func(a, b ScramCredential) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Mechanism, b.Mechanism))
	})
}
