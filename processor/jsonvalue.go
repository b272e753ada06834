package processor

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// A JSON reader and writer for the values expressions see and make: what
// encoding/json makes of a value decoded into an any (map[string]any,
// []any, float64, string, bool, nil), several times faster, since every
// record's value is parsed and many are written. Both give exactly what
// encoding/json gives (the fuzz tests compare them); a type this writer
// does not know is left to encoding/json.

var errJSON = errors.New("invalid JSON")

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

// parseJSON decodes b as json.Unmarshal into an any would.
func parseJSON(b []byte) (any, error) {
	p := jsonParser{b: b}
	p.space()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if p.space(); p.i != len(p.b) {
		return nil, fmt.Errorf("%w: data after the value at %d", errJSON, p.i)
	}
	return v, nil
}

type jsonParser struct {
	b     []byte
	i     int
	depth int
}

func (p *jsonParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) fail(what string) error {
	return fmt.Errorf("%w: %s at %d", errJSON, what, p.i)
}

func (p *jsonParser) value() (any, error) {
	if p.i >= len(p.b) {
		return nil, p.fail("unexpected end")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == 't':
		return p.literal("true", true)
	case c == 'f':
		return p.literal("false", false)
	case c == 'n':
		return p.literal("null", nil)
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, p.fail("unexpected character")
}

func (p *jsonParser) literal(word string, v any) (any, error) {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return nil, p.fail("bad literal")
	}
	p.i += len(word)
	return v, nil
}

func (p *jsonParser) enter() error {
	if p.depth++; p.depth > maxJSONDepth {
		return p.fail("nested too deep")
	}
	p.i++
	p.space()
	return nil
}

func (p *jsonParser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	m := map[string]any{}
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		p.depth--
		return m, nil
	}
	for {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.fail("expected a key")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.i++
		p.space()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m[k.(string)] = v
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ',' {
			p.i++
			p.space()
			continue
		}
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			p.depth--
			return m, nil
		}
		return nil, p.fail("expected ',' or '}'")
	}
}

func (p *jsonParser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	a := []any{}
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		p.depth--
		return a, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ',' {
			p.i++
			p.space()
			continue
		}
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			p.depth--
			return a, nil
		}
		return nil, p.fail("expected ',' or ']'")
	}
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func (p *jsonParser) number() (any, error) {
	b, i := p.b, p.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return nil, p.fail("bad number")
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return nil, p.fail("bad number")
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return nil, p.fail("bad number")
		}
		i = j
	}
	f, err := strconv.ParseFloat(string(b[p.i:i]), 64)
	if err != nil {
		return nil, fmt.Errorf("%w: number %s: %w", errJSON, b[p.i:i], err)
	}
	p.i = i
	return f, nil
}

// str reads a string at p.i (its opening quote).
func (p *jsonParser) str() (any, error) {
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		c := p.b[j]
		if c == '"' {
			p.i = j + 1
			return string(p.b[start:j]), nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return p.strSlow(start)
		}
	}
	return nil, p.fail("unterminated string")
}

// strSlow reads a string with escapes or non-ASCII bytes, as
// encoding/json does: a lone surrogate and invalid UTF-8 become U+FFFD.
func (p *jsonParser) strSlow(start int) (any, error) {
	b := p.b
	out := make([]byte, 0, 32) // grows with the string, not the input
	for i := start; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			p.i = i + 1
			return string(out), nil
		case c < 0x20:
			p.i = i
			return nil, p.fail("control character in string")
		case c == '\\':
			if i+1 >= len(b) {
				p.i = i
				return nil, p.fail("unterminated string")
			}
			switch e := b[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(b, i)
				if r < 0 {
					p.i = i
					return nil, p.fail("bad \\u escape")
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2 := hex4(b, i); r2 >= 0 {
						if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
							out = utf8.AppendRune(out, d)
							i += 6
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				p.i = i
				return nil, p.fail("bad escape")
			}
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				out = utf8.AppendRune(out, unicode.ReplacementChar)
			} else {
				out = append(out, b[i:i+n]...)
			}
			i += n
		}
	}
	p.i = len(b)
	return nil, p.fail("unterminated string")
}

// hex4 reads `\uXXXX` at b[i:], or returns -1.
func hex4(b []byte, i int) rune {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// appendJSON writes v as json.Marshal would.
func appendJSON(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case string:
		return appendJSONString(dst, x)
	case float64:
		return appendJSONFloat(dst, x)
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '{')
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var err error
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendJSONString(dst, k); err != nil {
				return nil, err
			}
			dst = append(dst, ':')
			if dst, err = appendJSON(dst, x[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		var err error
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendJSON(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

func appendJSONString(dst []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, err := json.Marshal(s) // escapes as encoding/json does
			if err != nil {
				return nil, err
			}
			return append(dst, b...), nil
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"'), nil
}

// appendJSONFloat formats f as encoding/json does.
func appendJSONFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("json: unsupported value: %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as encoding/json writes it.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}
