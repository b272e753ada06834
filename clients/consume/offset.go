package consume

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// OffsetKind says where consuming starts.
type OffsetKind int

// Start positions.
const (
	FromStart    OffsetKind = iota // each partition's log start
	FromEnd                        // each partition's end: only new records
	FromOffset                     // an absolute offset in every partition
	FromRelative                   // N records before each partition's end
	FromTime                       // the first record at or after a time
)

// Offset is a start position.
type Offset struct {
	Kind OffsetKind
	// N is the offset (FromOffset), the count back from the end
	// (FromRelative), or Unix milliseconds (FromTime).
	N int64
}

// ParseOffset reads kcat's -o forms: "start" (or "beginning"), "end", an
// offset, a negative count back from the end ("-10"), or "@" and Unix
// milliseconds ("@1714564800000", kcat's s@).
func ParseOffset(s string) (Offset, error) {
	switch s {
	case "start", "beginning", "earliest":
		return Offset{Kind: FromStart}, nil
	case "end", "latest":
		return Offset{Kind: FromEnd}, nil
	}
	ms, isTime := strings.CutPrefix(s, "@")
	if !isTime {
		ms, isTime = strings.CutPrefix(s, "s@")
	}
	if isTime {
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || n < 0 {
			return Offset{}, fmt.Errorf("offset %q: want @ and Unix milliseconds", s)
		}
		return Offset{Kind: FromTime, N: n}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return Offset{}, fmt.Errorf("offset %q: want start, end, an offset, -N (N from the end) or @unix-millis", s)
	}
	if n < 0 {
		return Offset{Kind: FromRelative, N: -n}, nil
	}
	return Offset{Kind: FromOffset, N: n}, nil
}

// kgo is the franz-go offset for o.
func (o Offset) kgo() kgo.Offset {
	switch o.Kind {
	case FromEnd:
		return kgo.NewOffset().AtEnd()
	case FromOffset:
		return kgo.NewOffset().At(o.N)
	case FromRelative:
		return kgo.NewOffset().AtEnd().Relative(-o.N)
	case FromTime:
		return kgo.NewOffset().AfterMilli(o.N)
	}
	return kgo.NewOffset().AtStart()
}
