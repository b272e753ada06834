package topic

import "fmt"

// The typed getters below parse an effective value. Values in a Resolved
// are valid by construction, so parsing cannot fail; asking for a name that
// is not a topic config, or with the getter of another type, is a
// programming error and panics. Use the name constants (RetentionMs, ...)
// so a typo fails to compile.

// typed returns the effective value of name after checking that its type
// is one of want.
func (r Resolved) typed(name string, want ...Type) string {
	def, ok := byName[name]
	if !ok {
		panic(fmt.Sprintf("topic: %q is not a topic config", name))
	}
	for _, t := range want {
		if def.Type == t {
			v, _ := r.Get(name)
			return v
		}
	}
	panic(fmt.Sprintf("topic: config %s is of type %s, not %v", name, def.Type, want))
}

// check panics on err: reached only if the config table's default or a
// validator is wrong, which the package's tests rule out.
func check(name string, err error) {
	if err != nil {
		panic(fmt.Sprintf("topic: internal: effective value of %s does not parse: %v", name, err))
	}
}

// Int64 returns the effective value of an int or long config.
func (r Resolved) Int64(name string) int64 {
	n, err := parseInt(r.typed(name, Int, Long), 64)
	check(name, err)
	return n
}

// Int32 returns the effective value of an int config.
func (r Resolved) Int32(name string) int32 {
	n, err := parseInt(r.typed(name, Int), 32)
	check(name, err)
	return int32(n)
}

// Bool returns the effective value of a boolean config.
func (r Resolved) Bool(name string) bool {
	b, err := parseBool(r.typed(name, Boolean))
	check(name, err)
	return b
}

// Float64 returns the effective value of a double config.
func (r Resolved) Float64(name string) float64 {
	f, err := parseDouble(r.typed(name, Double))
	check(name, err)
	return f
}

// String returns the effective value of a string config.
func (r Resolved) String(name string) string {
	return r.typed(name, String)
}

// List returns the elements of the effective value of a list config.
func (r Resolved) List(name string) []string {
	return parseList(r.typed(name, List))
}
