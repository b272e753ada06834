package acl

import (
	"fmt"
	"testing"
)

// bindings100k is a large ACL set: 100,000 literal topic bindings over
// 5,000 principals.
func bindings100k() []Binding {
	bs := make([]Binding, 0, 100_000)
	for i := range 100_000 {
		bs = append(bs, allow(ResourceTopic, fmt.Sprintf("team-%d.orders-%d", i%977, i), PatternLiteral, fmt.Sprintf("User:svc-%d", i%5000), OpRead))
	}
	return bs
}

// BenchmarkNewIndex100k is the rebuild every ACL create or delete pays
// at the cluster's bound of bindings.
func BenchmarkNewIndex100k(b *testing.B) {
	bs := bindings100k()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		NewIndex(bs)
	}
}

// BenchmarkDeleteFilters100k is the matching of a delete's 1,000 filters
// (the most one command carries), each naming a resource, against 100,000
// bindings.
func BenchmarkDeleteFilters100k(b *testing.B) {
	x := NewIndex(bindings100k())
	filters := make([]Filter, 1000)
	for i := range filters {
		name := fmt.Sprintf("team-%d.orders-%d", i%977, i)
		filters[i] = Filter{ResourceType: ResourceTopic, ResourceName: &name, PatternType: PatternMatch, Operation: OpAny, Permission: PermAny}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, f := range filters {
			if len(x.Bindings(f)) != 1 {
				b.Fatal("no match")
			}
		}
	}
}
