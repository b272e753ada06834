package broker

import "testing"

// TestReadBufClasses: small reads are not pooled; a pooled buffer holds
// at most twice the read; reads past the largest class are not pooled.
func TestReadBufClasses(t *testing.T) {
	for _, c := range []struct {
		n       int
		wantCap int // 0: not pooled
	}{
		{1, 0}, {170, 0}, {64<<10 - 1, 0}, {64 << 10, 64 << 10}, {64<<10 + 1, 128 << 10},
		{1 << 20, 1 << 20}, {8 << 20, 8 << 20}, {8<<20 + 1, 0},
	} {
		b := getReadBuf(c.n)
		if cap(b) != c.wantCap || len(b) != 0 {
			t.Errorf("read of %d: buffer len %d cap %d, want cap %d", c.n, len(b), cap(b), c.wantCap)
		}
		putReadBuf(b)
	}
}
