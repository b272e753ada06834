package wire

// ticket is one frame's admission: the bytes charged to the budget for it,
// from the frame's first body byte until its handler and writer are done.
// It is granted whole before the frame's buffer is allocated, and only
// ever shrinks afterwards, so holding one never waits for more.
type ticket struct {
	b       *budget
	src     *source
	n       int64
	reserve bool // charged to the small-frame reserve, not the main pool
}

// bytes reports what t holds.
func (t *ticket) bytes() int64 { return t.n }

// shrink gives back what t holds above n.
func (t *ticket) shrink(n int64) {
	if t.b == nil || n >= t.n {
		return
	}
	t.b.put(t, t.n-max(n, 0), false)
}

// release gives back everything t holds; t is empty afterwards, so a
// second call does nothing.
func (t *ticket) release() {
	if t.b == nil {
		return
	}
	t.b.put(t, t.n, true)
	t.b, t.src = nil, nil
}
