package log

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// textRecs returns n records of about size bytes of JSON-ish text, which
// compresses the way typical payloads do (3-5x), unlike runs of one byte.
func textRecs(n, size int) []testRecord {
	words := strings.Fields("the quick brown fox jumps over lazy dog user_id event click view " +
		"purchase session page timestamp region eu-west us-east amount currency EUR USD status ok")
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]testRecord, n)
	for i := range out {
		var sb strings.Builder
		for sb.Len() < size {
			fmt.Fprintf(&sb, `{"%s":%d,"%s":"%s"},`, words[rng.IntN(len(words))], rng.IntN(100000),
				words[rng.IntN(len(words))], words[rng.IntN(len(words))])
		}
		out[i] = testRecord{key: fmt.Appendf(nil, "key-%d", i), value: []byte(sb.String()[:size]), tsDelta: int64(i)}
	}
	return out
}

func BenchmarkValidateBatch(b *testing.B) {
	for _, codec := range []struct {
		name   string
		codec  int8
		xerial bool
	}{
		{"none", CompressionNone, false},
		{"snappy", CompressionSnappy, false},
		{"snappy-xerial", CompressionSnappy, true},
		{"lz4", CompressionLZ4, false},
		{"zstd", CompressionZstd, false},
		{"gzip", CompressionGzip, false},
	} {
		for _, n := range []int{1, 16, 256} {
			b.Run(fmt.Sprintf("%s/records=%dx1KiB", codec.name, n), func(b *testing.B) {
				batch := buildBatch(b, batchSpec{records: textRecs(n, 1024), codec: codec.codec, xerial: codec.xerial})
				b.SetBytes(int64(n * 1024))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := ValidateBatch(batch, 1<<20); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	l := openLog(b, b.TempDir(), DefaultConfig())
	batch := simpleBatch(b, 1, 1024-80, 1) // about 1 KiB in all
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	now := int64(0)
	for b.Loop() {
		now++
		if _, err := l.Append(batch, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	l := openLog(b, b.TempDir(), DefaultConfig())
	batch := simpleBatch(b, 1, 1024-80, 1)
	const n = 20000
	for range n {
		if _, err := l.Append(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name     string
		maxBytes int32
		tail     bool
	}{
		{"1KiB-random", 1024, false},
		{"1MiB-random", 1 << 20, false},
		{"tail", 1 << 20, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var total int64
			off := int64(0)
			for b.Loop() {
				o := off % n
				if bc.tail {
					o = n - 1
				}
				out, err := l.Read(o, bc.maxBytes)
				if err != nil || len(out) == 0 {
					b.Fatalf("Read(%d): %d bytes, %v", o, len(out), err)
				}
				total += int64(len(out))
				off += 7919 // a prime stride: scattered offsets
			}
			b.SetBytes(total / int64(b.N))
		})
	}
}

// BenchmarkFlushAfterAppends is a checkpoint's fsync after 64 MiB were
// appended in 256 KiB batches, at the rate a saturated broker appends
// them: with early writeback the kernel has written most of them by the
// time Flush runs. ns/op is the Flush alone.
func BenchmarkFlushAfterAppends(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("writeback=%v", on), func(b *testing.B) {
			defer func(was bool) { earlyWriteback = was }(earlyWriteback)
			earlyWriteback = on
			l := openLog(b, b.TempDir(), DefaultConfig())
			batch := simpleBatch(b, 256, 1024-80, 1) // about 256 KiB
			for b.Loop() {
				b.StopTimer()
				for range (64 << 20) / len(batch) {
					if _, err := l.Append(batch, 1); err != nil {
						b.Fatal(err)
					}
					time.Sleep(time.Millisecond) // about 250 MiB/s
				}
				b.StartTimer()
				if err := l.Flush(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
