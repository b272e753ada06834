package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchCounter is a franz-go hook that counts Fetch requests and their
// bytes on the wire.
type fetchCounter struct {
	fetches, reqBytes, respBytes atomic.Int64
}

func (c *fetchCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == kmsg.Fetch.Int16() && err == nil {
		c.reqBytes.Add(int64(n))
	}
}

func (c *fetchCounter) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == kmsg.Fetch.Int16() && err == nil {
		c.respBytes.Add(int64(n))
		c.fetches.Add(1)
	}
}

// procCPU is a process's user+system CPU time so far, from /proc.
func procCPU(b testing.TB, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("read /proc stat: %v", err)
	}
	// Fields after the command name (which may hold spaces) start at ")".
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// BenchmarkFetchSessions measures what incremental fetch sessions (KIP-227)
// save a franz-go consumer of 1,000 partitions, against the same consumer
// with kgo.DisableFetchSessions (a full fetch every time). brokerd runs as
// its own process so that its CPU is measured apart from the client's.
//
//   - idle: the consumer is caught up and nothing is written; every fetch
//     waits out FetchMaxWait (10ms) and returns nothing new.
//   - busy: a producer writes one record to the next partition every 2ms.
//
// Reported per fetch: request and response bytes, brokerd CPU, records.
//
//	go test -run '^$' -bench BenchmarkFetchSessions -benchtime 2000x ./e2e/
func BenchmarkFetchSessions(b *testing.B) {
	const parts = 1000
	bp := newBrokerProc(b)
	bp.start()
	addr := bp.kafkaAddr()
	createTopic(b, newAdmin(b, addr), "fs-bench", parts, nil)
	prod := newKgo(b, addr, kgo.DefaultProduceTopic("fs-bench"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testCtx(b, 30*time.Minute)
	var recs []*kgo.Record
	for p := range int32(parts) {
		recs = append(recs, &kgo.Record{Partition: p, Value: []byte("seed")})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatalf("seed: %v", err)
	}
	for _, load := range []string{"idle", "busy"} {
		for _, mode := range []string{"sessions", "full"} {
			b.Run(load+"/"+mode, func(b *testing.B) {
				hook := &fetchCounter{}
				opts := []kgo.Opt{
					kgo.ConsumeTopics("fs-bench"),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
					kgo.FetchMaxWait(10 * time.Millisecond),
					kgo.WithHooks(hook),
				}
				if mode == "full" {
					opts = append(opts, kgo.DisableFetchSessions())
				}
				cons := newKgo(b, addr, opts...)
				// Catch up first.
				got := 0
				for got < parts {
					got += len(cons.PollFetches(ctx).Records())
				}
				stop := make(chan struct{})
				done := make(chan struct{})
				go func() {
					defer close(done)
					if load != "busy" {
						return
					}
					tick := time.NewTicker(2 * time.Millisecond)
					defer tick.Stop()
					for i := int32(0); ; i++ {
						select {
						case <-stop:
							return
						case <-tick.C:
							prod.Produce(ctx, &kgo.Record{Partition: i % parts, Value: []byte("x")}, nil)
						}
					}
				}()
				records := 0
				go func() {
					for {
						fs := cons.PollFetches(ctx)
						if ctx.Err() != nil || cons.Context().Err() != nil {
							return
						}
						records += len(fs.Records())
					}
				}()
				time.Sleep(200 * time.Millisecond)
				f0, q0, r0 := hook.fetches.Load(), hook.reqBytes.Load(), hook.respBytes.Load()
				c0 := procCPU(b, bp.cmd.Process.Pid)
				if dir := os.Getenv("FS_PROFILE"); dir != "" {
					go func() {
						resp, err := http.Get("http://" + bp.adminAddr() + "/debug/pprof/profile?seconds=3")
						if err == nil {
							data, _ := io.ReadAll(resp.Body)
							resp.Body.Close()
							os.WriteFile(filepath.Join(dir, load+"-"+mode+".pprof"), data, 0o644)
						}
					}()
				}
				b.ResetTimer()
				for hook.fetches.Load()-f0 < int64(b.N) {
					time.Sleep(time.Millisecond)
				}
				b.StopTimer()
				c1 := procCPU(b, bp.cmd.Process.Pid)
				n := float64(hook.fetches.Load() - f0)
				close(stop)
				<-done
				b.ReportMetric(float64(hook.reqBytes.Load()-q0)/n, "req-B/fetch")
				b.ReportMetric(float64(hook.respBytes.Load()-r0)/n, "resp-B/fetch")
				b.ReportMetric(float64((c1-c0).Microseconds())/n, "brokerd-cpu-µs/fetch")
				cons.Close()
				_ = records
			})
		}
	}
}
