package acl

import (
	"fmt"
	"testing"
)

// BenchmarkAuthorize measures the fast path every request takes: a
// topic among a thousand bindings, literal and prefixed.
func BenchmarkAuthorize(b *testing.B) {
	var bs []Binding
	for i := range 500 {
		bs = append(bs, allow(ResourceTopic, fmt.Sprintf("topic-%d", i), PatternLiteral, fmt.Sprintf("User:u%d", i%50), OpRead))
		bs = append(bs, allow(ResourceTopic, fmt.Sprintf("team%d.", i), PatternPrefixed, fmt.Sprintf("User:u%d", i%50), OpWrite))
	}
	x := NewIndex(bs)
	p := &Policy{SuperUsers: map[string]bool{"User:admin": true}}
	req := Request{Principal: "User:u7", Host: "10.1.2.3"}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if !x.Authorize(p, req, OpWrite, ResourceTopic, "team7.orders") {
			b.Fatal("denied")
		}
	}
}
