package config

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parseYAML reads the flat YAML subset brokerd accepts: one "key: value"
// per line at the left margin, keys with their dots, values plain,
// 'single-quoted' or "double-quoted", # comments, an optional leading ---
// and trailing "...". "key:" with nothing after it is an empty value, like
// "key=" in a .properties file; ~ and null are empty too. Anything else YAML
// can express (indented mappings, lists, flow collections, anchors, tags,
// block scalars, several documents) is refused with an error naming the
// line. A key given twice is an error, as YAML requires.
func parseYAML(r io.Reader) ([]entry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out []entry
	seen := map[string]int{}
	lineNo := 0
	ended := false
	for sc.Scan() {
		lineNo++
		raw := sc.Text()
		if lineNo == 1 {
			raw = strings.TrimPrefix(raw, "\ufeff")
		}
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		if ended {
			return nil, fmt.Errorf("line %d: content after the end of the document", lineNo)
		}
		switch {
		case trimmed == "---" || strings.HasPrefix(trimmed, "--- "):
			if len(out) > 0 {
				return nil, fmt.Errorf("line %d: several YAML documents in one file are not supported", lineNo)
			}
			continue
		case trimmed == "...":
			ended = true
			continue
		case raw[0] == ' ' || raw[0] == '\t':
			return nil, fmt.Errorf("line %d: indented (nested) YAML is not supported: write each key with its dots at the left margin, e.g. \"log.dirs: /data\"", lineNo)
		case strings.HasPrefix(trimmed, "- ") || trimmed == "-":
			return nil, fmt.Errorf("line %d: YAML lists are not supported: write the value as one string, e.g. \"brokerd.raft.peers: 1@a:9093,2@b:9093\"", lineNo)
		case trimmed[0] == '%':
			return nil, fmt.Errorf("line %d: YAML directives are not supported", lineNo)
		}
		k, v, err := yamlLine(trimmed)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		if prev, ok := seen[k]; ok {
			return nil, fmt.Errorf("line %d: key %s already given on line %d", lineNo, k, prev)
		}
		seen[k] = lineNo
		out = append(out, entry{key: k, value: v, line: lineNo})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", lineNo+1, err)
	}
	return out, nil
}

// yamlLine splits "key: value" (the line already trimmed).
func yamlLine(line string) (string, string, error) {
	var key, rest string
	if line[0] == '"' || line[0] == '\'' {
		k, after, err := quoted(line)
		if err != nil {
			return "", "", fmt.Errorf("key: %w", err)
		}
		if !strings.HasPrefix(after, ":") {
			return "", "", fmt.Errorf("want \"key: value\"")
		}
		key, rest = k, after[1:]
	} else {
		i := strings.Index(line, ": ")
		j := strings.Index(line, ":\t")
		if i < 0 || (j >= 0 && j < i) {
			i = j
		}
		switch {
		case i >= 0:
			key, rest = line[:i], line[i+1:]
		case strings.HasSuffix(line, ":"):
			key, rest = line[:len(line)-1], ""
		default:
			return "", "", fmt.Errorf("want \"key: value\"")
		}
		key = strings.TrimSpace(key)
		if strings.ContainsAny(key, "{}[]&*!|>%@`#") || strings.HasPrefix(key, "? ") {
			return "", "", fmt.Errorf("key %q: only plain dotted keys are supported", key)
		}
	}
	if key == "" {
		return "", "", fmt.Errorf("empty key")
	}
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", "", fmt.Errorf("want a space after \"%s:\"", key)
	}
	v, err := yamlValue(strings.TrimSpace(rest))
	if err != nil {
		return "", "", fmt.Errorf("value of %s: %w", key, err)
	}
	return key, v, nil
}

// yamlValue reads a scalar: quoted, or plain up to a " #" comment.
func yamlValue(s string) (string, error) {
	if s == "" || s[0] == '#' {
		return "", nil
	}
	switch s[0] {
	case '"', '\'':
		v, after, err := quoted(s)
		if err != nil {
			return "", err
		}
		after = strings.TrimSpace(after)
		if after != "" && after[0] != '#' {
			return "", fmt.Errorf("unexpected %q after the quoted value", after)
		}
		return v, nil
	case '[', '{':
		return "", fmt.Errorf("flow collections are not supported: write the value as one string")
	case '&', '*', '!':
		return "", fmt.Errorf("anchors, aliases and tags are not supported")
	case '|', '>':
		return "", fmt.Errorf("block scalars are not supported: write the value on one line")
	case '@', '`':
		return "", fmt.Errorf("a plain value cannot start with %q: quote it", s[0])
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "\t#"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if s == "~" || s == "null" || s == "Null" || s == "NULL" {
		return "", nil
	}
	return s, nil
}

// quoted reads a single- or double-quoted scalar at the start of s and
// returns it with what follows the closing quote.
func quoted(s string) (string, string, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case q == '\'' && c == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), s[i+1:], nil
		case q == '"' && c == '"':
			return b.String(), s[i+1:], nil
		case q == '"' && c == '\\':
			n, err := yamlEscape(s[i+1:], &b)
			if err != nil {
				return "", "", err
			}
			i += n
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("unterminated %c-quoted value (multi-line values are not supported)", q)
}

// yamlEscape writes the escape at the start of s (after the backslash) and
// returns how many bytes it used.
func yamlEscape(s string, b *strings.Builder) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("backslash at the end of the line")
	}
	simple := map[byte]byte{'0': 0, 'a': '\a', 'b': '\b', 't': '\t', 'n': '\n', 'v': '\v', 'f': '\f',
		'r': '\r', 'e': 0x1b, ' ': ' ', '"': '"', '/': '/', '\\': '\\'}
	if c, ok := simple[s[0]]; ok {
		b.WriteByte(c)
		return 1, nil
	}
	width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	if width == 0 || len(s) < 1+width {
		return 0, fmt.Errorf("unsupported escape \\%c", s[0])
	}
	n, err := strconv.ParseUint(s[1:1+width], 16, 32)
	if err != nil || !utf8.ValidRune(rune(n)) {
		return 0, fmt.Errorf("bad escape \\%s", s[:1+width])
	}
	b.WriteRune(rune(n))
	return 1 + width, nil
}
