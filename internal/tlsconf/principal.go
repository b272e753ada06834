package tlsconf

import (
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Anonymous is Kafka's principal of a client that did not authenticate.
const Anonymous = "User:ANONYMOUS"

// SubjectDN is the certificate's subject in RFC 2253 form, most specific
// attribute first ("CN=client,OU=eng,O=acme"), as Kafka's
// X500Principal.getName() gives it.
func SubjectDN(c *x509.Certificate) (string, error) {
	return rfc2253(c.RawSubject)
}

// rule is one entry of ssl.principal.mapping.rules: DEFAULT (the DN as it
// is) or RULE:pattern/replacement/[LU].
type rule struct {
	def         bool
	pattern     *regexp.Regexp
	replacement string
	caseFold    byte // 0, 'L' or 'U'
}

// Rules maps a certificate's DN to a principal name, as Kafka's
// SslPrincipalMapper: the first rule whose pattern matches the whole DN
// gives the name; DEFAULT matches anything and keeps the DN.
type Rules struct{ rules []rule }

// ruleRE is Kafka's rule syntax: DEFAULT, or RULE:pattern/replacement/
// with an optional L or U, "\/" standing for a slash inside the pattern
// or the replacement; rules separated by commas.
var ruleRE = regexp.MustCompile(`^\s*(?:(DEFAULT)|RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?))\s*(?:,|$)`)

// ParseRules reads ssl.principal.mapping.rules; "" is DEFAULT.
func ParseRules(s string) (*Rules, error) {
	r := &Rules{}
	if strings.TrimSpace(s) == "" {
		r.rules = []rule{{def: true}}
		return r, nil
	}
	rest := s
	for strings.TrimSpace(rest) != "" {
		m := ruleRE.FindStringSubmatch(rest)
		if m == nil {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: cannot read %q: want DEFAULT or RULE:pattern/replacement/[LU], separated by commas", rest)
		}
		rest = rest[len(m[0]):]
		if m[1] != "" {
			r.rules = append(r.rules, rule{def: true})
			continue
		}
		pat := strings.ReplaceAll(m[2], `\/`, "/")
		re, err := regexp.Compile("^(?:" + pat + ")$")
		if err != nil {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: pattern %q: %w", pat, err)
		}
		repl := strings.ReplaceAll(m[3], `\/`, "/")
		if bad := ambiguousGroupRE.FindString(repl); bad != "" {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: replacement %q: %q names no group in Go's syntax (a group name cannot start with a digit); write ${%s}%s", repl, bad, digitsOf(bad[1:]), bad[1+len(digitsOf(bad[1:])):])
		}
		ru := rule{pattern: re, replacement: repl}
		if m[4] != "" {
			ru.caseFold = m[4][0]
		}
		r.rules = append(r.rules, ru)
	}
	return r, nil
}

// ErrNoRule: no rule of ssl.principal.mapping.rules matches a DN. Kafka
// fails the authentication then, and so does brokerd.
var ErrNoRule = errors.New("no ssl.principal.mapping.rules rule matches the certificate subject")

// Apply maps dn.
func (r *Rules) Apply(dn string) (string, error) {
	for _, ru := range r.rules {
		if ru.def {
			return dn, nil
		}
		if !ru.pattern.MatchString(dn) {
			continue
		}
		out := ru.pattern.ReplaceAllString(dn, ru.replacement)
		switch ru.caseFold {
		case 'L':
			out = strings.ToLower(out)
		case 'U':
			out = strings.ToUpper(out)
		}
		if out == "" {
			// Every client it matched would be one principal.
			return "", fmt.Errorf("%q maps to an empty name: %w", dn, ErrNoRule)
		}
		return out, nil
	}
	return "", fmt.Errorf("%q: %w", dn, ErrNoRule)
}

// ambiguousGroupRE finds $name references whose name starts with a digit
// and goes on with letters or underscores: Java reads "$1x" as group 1 and
// "x", Go as a group named "1x", which does not exist and expands to
// nothing.
var ambiguousGroupRE = regexp.MustCompile(`\$[0-9]+[A-Za-z_][A-Za-z0-9_]*`)

// digitsOf is the leading digits of s.
func digitsOf(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}
