package wire

import (
	"net"
	"net/netip"
)

// sourceKey identifies where connections come from, for fairness and the
// per-IP connection limit: an IPv4 address, or an IPv6 /64 (one host
// usually holds a whole /64, so a finer key would let it pose as many).
type sourceKey struct {
	prefix netip.Prefix
	other  string // an address that is not TCP/IP (a pipe in tests)
}

// sourceKeyOf returns the source of a connection's remote address.
func sourceKeyOf(a net.Addr) sourceKey {
	if ta, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			ip = ip.Unmap()
			if ip.Is4() {
				return sourceKey{prefix: netip.PrefixFrom(ip, 32)}
			}
			return sourceKey{prefix: netip.PrefixFrom(ip.WithZone(""), 64).Masked()}
		}
	}
	if a == nil {
		return sourceKey{}
	}
	return sourceKey{other: a.String()}
}

func (k sourceKey) String() string {
	if k.prefix.IsValid() {
		if k.prefix.Addr().Is4() {
			return k.prefix.Addr().String()
		}
		return k.prefix.String()
	}
	return k.other
}

// source is the admission state of one sourceKey: its connections, what
// its frames hold, and its frames waiting for room in arrival order. It
// lives while it has a connection, a ticket or a waiter (refs), and is
// forgotten then, so the map of sources stays bounded by what is open.
// Every field is guarded by the budget's mutex.
type source struct {
	key   sourceKey
	conns int
	refs  int
	held  int64 // main-pool bytes held by its tickets
	small int64 // reserve bytes held by its tickets

	queue []*waiter // FIFO
	// Ring links while the source has waiters (see budget.ring).
	inRing     bool
	prev, next *source
}

func (s *source) head() *waiter { return s.queue[0] }

func (s *source) push(w *waiter) { s.queue = append(s.queue, w) }

// remove takes w out of the queue wherever it is.
func (s *source) remove(w *waiter) {
	for i, q := range s.queue {
		if q == w {
			copy(s.queue[i:], s.queue[i+1:])
			s.queue[len(s.queue)-1] = nil
			s.queue = s.queue[:len(s.queue)-1]
			break
		}
	}
	if len(s.queue) == 0 {
		s.queue = nil // do not keep a grown array for an idle source
	}
}
