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
		all:        slices.Clone(bindings),
		literal:    map[resource][]Binding{},
		prefixed:   map[resource][]Binding{},
		prefixLens: map[ResourceType][]int{},
		byType:     map[ResourceType]int{},
	}
	slices.SortFunc(x.all, func(a, b Binding) int { return strings.Compare(a.Key(), b.Key()) })
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

// Bindings returns the bindings a filter selects, in a stable order.
func (x *Index) Bindings(f Filter) []Binding {
	if x == nil {
		return nil
	}
	var out []Binding
	for _, b := range x.all {
		if f.Matches(b) {
			out = append(out, b)
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
