package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestShutdownKeepsEveryRecord produces to a brokerd subprocess, keeps
// producing while it sends SIGTERM, checks the exit status is 0 and, after
// a restart, that every acknowledged record is there.
func TestShutdownKeepsEveryRecord(t *testing.T) {
	p := newProc(t)
	p.start()
	mustRun(t, "", "topic", "create", "durable", "-p", "3", "-b", p.kafka)

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DefaultProduceTopic("durable"),
		kgo.RecordDeliveryTimeout(2*time.Second), kgo.RecordRetries(3))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close() // safe twice
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var (
		mu    sync.Mutex
		acked = map[string]bool{}
	)
	record := func(i int) *kgo.Record {
		return &kgo.Record{Key: []byte(itoa(i % 17)), Value: []byte(fmt.Sprintf("r-%d", i))}
	}
	var first []*kgo.Record
	for i := range 1000 {
		first = append(first, record(i))
	}
	for _, r := range cl.ProduceSync(ctx, first...) {
		if r.Err != nil {
			t.Fatalf("produce: %v", r.Err)
		}
		acked[string(r.Record.Value)] = true
	}

	// Keep producing while the broker shuts down: whatever it
	// acknowledges must survive.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1000; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			cl.Produce(ctx, record(i), func(r *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					acked[string(r.Value)] = true
					mu.Unlock()
				}
			})
			time.Sleep(200 * time.Microsecond)
		}
	}()
	time.Sleep(200 * time.Millisecond)
	began := time.Now()
	p.signal(syscall.SIGTERM)
	code := p.wait(20 * time.Second)
	took := time.Since(began)
	close(stop)
	wg.Wait()
	cl.Close() // the broker is gone: what is still buffered fails now
	if code != 0 {
		t.Fatalf("SIGTERM: exit status %d, want 0", code)
	}
	t.Logf("stopped %v after SIGTERM; %d records acknowledged", took.Round(time.Millisecond), len(acked))
	if log := p.log(); !strings.Contains(log, "stopped cleanly") || !strings.Contains(log, "kafka listener drained") {
		t.Errorf("shutdown log lacks its steps")
	}

	p.start()
	mu.Lock()
	want := len(acked)
	mu.Unlock()
	out := mustRun(t, "", "consume", "durable", "-e", "-f", `%v\n`, "-b", p.kafka)
	got := map[string]bool{}
	for _, v := range strings.Fields(out) {
		got[v] = true
	}
	missing := 0
	mu.Lock()
	for v := range acked {
		if !got[v] {
			missing++
		}
	}
	mu.Unlock()
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged records lost across the restart", missing, want)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(20 * time.Second); code != 0 {
		t.Fatalf("second run: exit status %d", code)
	}
}

// TestShutdownSecondSignal sends SIGTERM and, before the graceful
// shutdown can finish, SIGINT (a different signal, so the kernel cannot
// merge the two): the process must end at once with a non-zero status.
func TestShutdownSecondSignal(t *testing.T) {
	p := newProc(t)
	p.start()
	began := time.Now()
	p.signal(syscall.SIGTERM)
	p.signal(syscall.SIGINT)
	code := p.wait(5 * time.Second)
	if code == 0 {
		t.Errorf("second signal: exit status 0, want non-zero")
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("second signal took %v to end the process", d)
	}
	if !strings.Contains(p.log(), "second signal") {
		t.Errorf("log does not mention the second signal")
	}
}
