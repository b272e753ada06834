package throttle

import (
	"hash/maphash"
	"math/bits"
)

// hkey names a user and client id pair (or a quota entity's names) by a
// 128-bit hash under seeds chosen at start: the tables hold no client's
// strings, and a client cannot aim for a collision without the seeds.
type hkey struct{ a, b uint64 }

type hasher struct{ u1, c1, u2, c2 maphash.Seed }

func newHasher() hasher {
	return hasher{maphash.MakeSeed(), maphash.MakeSeed(), maphash.MakeSeed(), maphash.MakeSeed()}
}

// pair hashes user and clientID, each under seeds of its own, so that
// moving bytes from one to the other changes the key.
func (h hasher) pair(user, clientID string) hkey {
	return hkey{
		maphash.String(h.u1, user)*0x9e3779b97f4a7c15 + maphash.String(h.c1, clientID),
		bits.RotateLeft64(maphash.String(h.u2, user), 29) ^ maphash.String(h.c2, clientID),
	}
}
