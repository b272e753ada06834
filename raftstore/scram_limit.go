package raftstore

import (
	"errors"
	"fmt"
)

// The SCRAM credentials are held whole in memory and in every snapshot
// manifest, so their total is bounded: at most MaxScramCredentials
// credentials, and at most MaxScramStateBytes of them as the manifest's
// JSON may encode them (scramJSONBytes, a worst case). Apply refuses an
// upsert beyond either bound, the proposer checks first for a clear
// error, and a manifest beyond them is refused, so credentials can never
// take the manifest past maxManifestBytes.
const (
	MaxScramCredentials = 20000
	MaxScramStateBytes  = 16 << 20
)

// ErrScramLimit: an upsert would take the credentials past
// MaxScramCredentials or MaxScramStateBytes.
var ErrScramLimit = errors.New("SCRAM credential limit reached")

// scramJSONBytes bounds what c takes in a manifest's JSON: a string byte
// escapes to at most 6 bytes, base64 takes 4 bytes per 3, plus the field
// names and punctuation.
func scramJSONBytes(c *ScramCredential) int64 {
	b64 := func(n int) int64 { return int64(n+2) / 3 * 4 }
	return 6*int64(len(c.User)+len(c.Mechanism)) + b64(len(c.Salt)) + b64(len(c.StoredKey)) + b64(len(c.ServerKey)) + 128
}

// scramUsage is the count and JSON bytes of a set of credentials.
type scramUsage struct {
	count int
	bytes int64
}

// usageOf totals creds.
func usageOf(creds map[ScramKey]ScramCredential) scramUsage {
	u := scramUsage{count: len(creds)}
	for _, c := range creds {
		u.bytes += scramJSONBytes(&c)
	}
	return u
}

// admit adds c, replacing old if there is one, unless that passes a
// bound.
func (u *scramUsage) admit(c *ScramCredential, old *ScramCredential) error {
	next := *u
	if old == nil {
		next.count++
	} else {
		next.bytes -= scramJSONBytes(old)
	}
	next.bytes += scramJSONBytes(c)
	switch {
	case next.count > MaxScramCredentials:
		return fmt.Errorf("%w: %d credentials at most", ErrScramLimit, MaxScramCredentials)
	case next.bytes > MaxScramStateBytes:
		return fmt.Errorf("%w: %d bytes of credentials at most", ErrScramLimit, MaxScramStateBytes)
	}
	*u = next
	return nil
}

// remove takes c out.
func (u *scramUsage) remove(c *ScramCredential) {
	u.count--
	u.bytes -= scramJSONBytes(c)
}

// CheckScramRoom reports, without changing anything, whether upserts fit
// the bounds given the credentials this node has applied: nil, or an
// error wrapping ErrScramLimit. Apply checks again.
func (s *Store) CheckScramRoom(upserts []ScramCredential) error {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	u := usageOf(s.fsm.scram)
	seen := map[ScramKey]bool{}
	for i := range upserts {
		k := upserts[i].key()
		var old *ScramCredential
		if c, ok := s.fsm.scram[k]; ok && !seen[k] {
			old = &c
		}
		seen[k] = true
		if err := u.admit(&upserts[i], old); err != nil {
			return err
		}
	}
	return nil
}

// validateScramUsage checks a manifest's credentials against the bounds.
func validateScramUsage(creds []ScramCredential) error {
	if len(creds) > MaxScramCredentials {
		return fmt.Errorf("%w: %d SCRAM credentials (at most %d)", errBadSnapshot, len(creds), MaxScramCredentials)
	}
	var n int64
	for i := range creds {
		n += scramJSONBytes(&creds[i])
	}
	if n > MaxScramStateBytes {
		return fmt.Errorf("%w: %d bytes of SCRAM credentials (at most %d)", errBadSnapshot, n, MaxScramStateBytes)
	}
	return nil
}
