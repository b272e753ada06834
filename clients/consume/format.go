package consume

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Formatter renders records with a kcat-style template:
//
//	%t topic         %p partition      %o offset
//	%k key           %K key length (-1 when null)
//	%v or %s value   %S value length (-1 when null)
//	%T timestamp (Unix milliseconds)
//	%h headers as key=value,key=value
//	%% a percent sign
//
// and the escapes \n \r \t \\ and \0.
type Formatter struct {
	parts []part
}

type part struct {
	lit  string
	verb byte // 0 for a literal
}

// DefaultFormat prints each value on its own line.
const DefaultFormat = `%v\n`

// NewFormatter compiles a template.
func NewFormatter(format string) (*Formatter, error) {
	f := &Formatter{}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			f.parts = append(f.parts, part{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch c {
		case '\\':
			if i+1 == len(format) {
				return nil, fmt.Errorf("format %q: a backslash ends it", format)
			}
			i++
			esc, ok := map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', '\\': '\\', '0': 0}[format[i]]
			if !ok {
				return nil, fmt.Errorf("format %q: unknown escape \\%c", format, format[i])
			}
			lit.WriteByte(esc)
		case '%':
			if i+1 == len(format) {
				return nil, fmt.Errorf("format %q: a %% ends it", format)
			}
			i++
			v := format[i]
			switch v {
			case '%':
				lit.WriteByte('%')
			case 't', 'p', 'o', 'k', 'K', 'v', 's', 'S', 'T', 'h':
				flush()
				f.parts = append(f.parts, part{verb: v})
			default:
				return nil, fmt.Errorf("format %q: unknown directive %%%c", format, v)
			}
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return f, nil
}

// Append appends r rendered to dst.
func (f *Formatter) Append(dst []byte, r *kgo.Record) []byte {
	for _, p := range f.parts {
		switch p.verb {
		case 0:
			dst = append(dst, p.lit...)
		case 't':
			dst = append(dst, r.Topic...)
		case 'p':
			dst = strconv.AppendInt(dst, int64(r.Partition), 10)
		case 'o':
			dst = strconv.AppendInt(dst, r.Offset, 10)
		case 'k':
			dst = append(dst, r.Key...)
		case 'K':
			dst = appendLen(dst, r.Key)
		case 'v', 's':
			dst = append(dst, r.Value...)
		case 'S':
			dst = appendLen(dst, r.Value)
		case 'T':
			dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, h.Key...)
				dst = append(dst, '=')
				dst = append(dst, h.Value...)
			}
		}
	}
	return dst
}

func appendLen(dst, b []byte) []byte {
	if b == nil {
		return append(dst, "-1"...)
	}
	return strconv.AppendInt(dst, int64(len(b)), 10)
}
