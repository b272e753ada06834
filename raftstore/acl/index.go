package acl

import (
	"slices"
	"strings"
)

// Index is an immutable, searchable set of bindings: what a request is
// authorized against. Build one with NewIndex; a new set of bindings makes
// a new Index (bindings change rarely; requests read them always).
type Index struct {
	all []Binding // sorted by Key
	// literal maps a resource (type and name, "*" included) to the literal
	// bindings on it.
	literal map[resource][]Binding
	// prefixed maps a resource (type and prefix) to the prefixed bindings
	// on it; prefixLens lists, per type, the distinct prefix lengths in
	// use, so a lookup tries only those.
	prefixed   map[resource][]Binding
	prefixLens map[ResourceType][]int
	// byType counts the bindings of each resource type.
	byType map[ResourceType]int
}

type resource struct {
	typ  ResourceType
	name string
}

// NewIndex indexes bindings (assumed valid and distinct).
func NewIndex(bindings []Binding) *Index {
	x := &Index{
		all:        make([]Binding, len(bindings)),
		literal:    map[resource][]Binding{},
		prefixed:   map[resource][]Binding{},
		prefixLens: map[ResourceType][]int{},
		byType:     map[ResourceType]int{},
	}
	// Each key is built once, not twice per comparison.
	type keyed struct {
		key string
		at  int
	}
	order := make([]keyed, len(bindings))
	for i := range bindings {
		order[i] = keyed{bindings[i].Key(), i}
	}
	slices.SortFunc(order, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	for i, k := range order {
		x.all[i] = bindings[k.at]
	}
	for _, b := range x.all {
		r := resource{b.ResourceType, b.ResourceName}
		x.byType[b.ResourceType]++
		if b.PatternType == PatternPrefixed {
			x.prefixed[r] = append(x.prefixed[r], b)
			if l := x.prefixLens[b.ResourceType]; !slices.Contains(l, len(b.ResourceName)) {
				x.prefixLens[b.ResourceType] = append(l, len(b.ResourceName))
			}
			continue
		}
		x.literal[r] = append(x.literal[r], b)
	}
	for _, l := range x.prefixLens {
		slices.Sort(l)
	}
	return x
}

// Len is the number of bindings.
func (x *Index) Len() int {
	if x == nil {
		return 0
	}
	return len(x.all)
}

// Bindings returns the bindings a filter selects, sorted by Key. A filter
// that names a resource looks only at the bindings indexed under that
// name (and, to match, under the wildcard and the name's prefixes);
// another scans them all.
func (x *Index) Bindings(f Filter) []Binding {
	if x == nil {
		return nil
	}
	if f.ResourceName == nil {
		return x.scan(f)
	}
	var out []Binding
	lists := 0
	add := func(bs []Binding) {
		if len(bs) == 0 {
			return
		}
		lists++
		for i := range bs {
			if f.Matches(bs[i]) {
				out = append(out, bs[i])
			}
		}
	}
	name := *f.ResourceName
	for typ := ResourceTopic; typ <= ResourceUser; typ++ {
		if f.ResourceType != ResourceAny && f.ResourceType != typ || x.byType[typ] == 0 {
			continue
		}
		r := resource{typ, name}
		switch f.PatternType {
		case PatternLiteral:
			add(x.literal[r])
		case PatternPrefixed:
			add(x.prefixed[r])
		case PatternAny:
			add(x.literal[r])
			add(x.prefixed[r])
		case PatternMatch:
			add(x.literal[r])
			if name != WildcardResource {
				add(x.literal[resource{typ, WildcardResource}])
			}
			for _, n := range x.prefixLens[typ] {
				if n > len(name) {
					break
				}
				add(x.prefixed[resource{typ, name[:n]}])
			}
		}
	}
	if lists > 1 {
		slices.SortFunc(out, func(a, b Binding) int { return strings.Compare(a.Key(), b.Key()) })
	}
	return out
}

// scan returns the bindings a filter selects, looking at every one.
func (x *Index) scan(f Filter) []Binding {
	var out []Binding
	for i := range x.all {
		if f.Matches(x.all[i]) {
			out = append(out, x.all[i])
		}
	}
	return out
}

// All returns every binding, in a stable order. The caller must not
// modify the slice.
func (x *Index) All() []Binding {
	if x == nil {
		return nil
	}
	return x.all
}
