package wire

import (
	"context"
	"net/netip"
	"testing"
	"time"
)

// BenchmarkAdmission: one ticket granted and released per op, as the
// reader and the slot do for every request (a Heartbeat-sized frame, and a
// 64 KiB Produce that does not qualify for the reserve).
func BenchmarkAdmission(b *testing.B) {
	for _, c := range []struct {
		name string
		n    int64
	}{{"heartbeat", ticketBytes(12, 40)}, {"produce64KiB", ticketBytes(apiKeyProduce, 64<<10)}} {
		b.Run(c.name+"/serial", func(b *testing.B) {
			bud := newBudget(DefaultMaxInFlightBytes)
			src, _ := bud.openConn(sourceKey{prefix: netip.MustParsePrefix("10.0.0.1/32")})
			ctx := context.Background()
			deadline := time.Now().Add(time.Hour)
			b.ReportAllocs()
			for b.Loop() {
				tk, err := bud.acquire(ctx, nil, src, c.n, deadline)
				if err != nil {
					b.Fatal(err)
				}
				tk.shrink(100)
				tk.release()
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			bud := newBudget(DefaultMaxInFlightBytes)
			ctx := context.Background()
			deadline := time.Now().Add(time.Hour)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				src, _ := bud.openConn(sourceKey{other: "x"})
				for pb.Next() {
					tk, err := bud.acquire(ctx, nil, src, c.n, deadline)
					if err != nil {
						b.Error(err)
						return
					}
					tk.shrink(100)
					tk.release()
				}
			})
		})
	}
	b.Run("contended", func(b *testing.B) {
		// Room for 4 of 16 goroutines from 16 sources: most acquisitions
		// wait.
		n := ticketBytes(apiKeyProduce, 64<<10)
		bud := newBudget(4 * n * reserveShare / (reserveShare - 1))
		ctx := context.Background()
		deadline := time.Now().Add(time.Hour)
		b.ReportAllocs()
		b.SetParallelism(8)
		var next int
		b.RunParallel(func(pb *testing.PB) {
			bud.mu.Lock()
			next++
			key := sourceKey{prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(next)}), 32)}
			bud.mu.Unlock()
			src, _ := bud.openConn(key)
			for pb.Next() {
				tk, err := bud.acquire(ctx, nil, src, n, deadline)
				if err != nil {
					b.Error(err)
					return
				}
				tk.release()
			}
		})
	})
}
