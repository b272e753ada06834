package wire

import (
	"context"
	"fmt"
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
	}{{"heartbeat", int64(40)}, {"produce64KiB", int64(64 << 10)}} {
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
		n := int64(64 << 10)
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

// BenchmarkReleaseWithWaiters: a Heartbeat-sized ticket granted and
// released while the frame pool is full and 2 MiB frames wait, spread
// over many sources: a release must not walk the waiters.
func BenchmarkReleaseWithWaiters(b *testing.B) {
	for _, c := range []struct{ waiters, sources int }{{0, 0}, {1000, 1}, {10000, 10}, {10000, 10000}} {
		b.Run(fmt.Sprintf("waiters=%d/sources=%d", c.waiters, c.sources), func(b *testing.B) {
			bud, _ := newPools(Config{}.withDefaults())
			var full []ticket
			for _, h := range []string{"hog1", "hog2"} {
				src, _ := bud.openConn(sourceKey{other: h})
				full = append(full, mustAcquire(b, bud, src, bud.share))
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for i := range c.waiters {
				k := i % c.sources
				key := sourceKey{prefix: netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, byte(k >> 16), byte(k >> 8), byte(k)}), 64)}
				src, _ := bud.openConn(key)
				go bud.acquire(ctx, nil, src, 2<<20, time.Now().Add(time.Hour))
			}
			waitFor(b, "queued", func() bool { return bud.waiting() == c.waiters })
			me, _ := bud.openConn(sourceKey{other: "me"})
			b.ResetTimer()
			for b.Loop() {
				tk, err := bud.acquire(ctx, nil, me, 40, farAway)
				if err != nil {
					b.Fatal(err)
				}
				tk.shrink(20)
				tk.release()
			}
			b.StopTimer()
			for _, tk := range full {
				tk.release()
			}
		})
	}
}
