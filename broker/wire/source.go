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

// source is the admission state of one sourceKey in one pool: its
// connections, what its tickets hold, and its frames waiting for room in
// arrival order. It lives while it has a connection, a ticket or a waiter
// (refs), and is forgotten then, so the map of sources stays bounded by
// what is open. Every field is guarded by the budget's mutex.
type source struct {
	key   sourceKey
	conns int
	refs  int
	held  int64 // main-part bytes held by its tickets
	small int64 // reserve bytes held by its tickets

	queue  []*waiter // large frames, FIFO
	smallQ []*waiter // small frames (see budget.smallMax), FIFO

	// Positions in the budget's heaps (-1 when out), and links in its
	// list of sources with small waiters.
	ageIdx, sizeIdx      int
	inSmall              bool
	smallPrev, smallNext *source
}

// removeWaiter takes w out of q wherever it is.
func removeWaiter(q []*waiter, w *waiter) []*waiter {
	for i, x := range q {
		if x == w {
			copy(q[i:], q[i+1:])
			q[len(q)-1] = nil
			q = q[:len(q)-1]
			break
		}
	}
	if len(q) == 0 {
		return nil // do not keep a grown array for an idle source
	}
	return q
}

// headHeap orders sources by their large head: by how long it has been
// the head (byAge) or by its size, then age (bySize). It keeps each
// source's index so that a source can be fixed or removed in O(log n).
type headHeap struct {
	bySize bool
	s      []*source
}

func (h *headHeap) len() int { return len(h.s) }

func (h *headHeap) top() *source {
	if len(h.s) == 0 {
		return nil
	}
	return h.s[0]
}

func (h *headHeap) idx(s *source) *int {
	if h.bySize {
		return &s.sizeIdx
	}
	return &s.ageIdx
}

func (h *headHeap) less(i, j int) bool {
	a, b := h.s[i].queue[0], h.s[j].queue[0]
	if h.bySize && a.n != b.n {
		return a.n < b.n
	}
	return a.headSince.Before(b.headSince)
}

func (h *headHeap) swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	*h.idx(h.s[i]) = i
	*h.idx(h.s[j]) = j
}

func (h *headHeap) push(s *source) {
	h.s = append(h.s, s)
	*h.idx(s) = len(h.s) - 1
	h.up(len(h.s) - 1)
}

func (h *headHeap) remove(s *source) {
	i := *h.idx(s)
	last := len(h.s) - 1
	if i != last {
		h.swap(i, last)
	}
	h.s[last] = nil
	h.s = h.s[:last]
	*h.idx(s) = -1
	if i != last {
		h.fixAt(i)
	}
}

func (h *headHeap) fix(s *source) { h.fixAt(*h.idx(s)) }

func (h *headHeap) fixAt(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *headHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *headHeap) down(i0 int) bool {
	i, n := i0, len(h.s)
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && h.less(r, j) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
