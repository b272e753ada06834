package produce

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultMaxLine is the longest input line Lines accepts by default.
const DefaultMaxLine = 16 << 20

// Options configure Lines.
type Options struct {
	Topic string
	// KeySeparator splits each line into key and value; "" means no keys.
	KeySeparator string
	// Headers are added to every record.
	Headers []Header
	// Partition sends every record to one partition; -1 lets the default
	// partitioner choose (by key hash, or sticky for unkeyed records).
	Partition int32
	// MaxLine is the longest line accepted (default DefaultMaxLine).
	MaxLine int
	// Progress, if not nil, is called with the number of records
	// acknowledged so far, from franz-go's goroutines.
	Progress func(acked int64)
}

// Result summarises what Lines produced.
type Result struct {
	Topic   string `json:"topic"`
	Records int64  `json:"records"`
	Bytes   int64  `json:"bytes"`
	// Partitions lists, per partition written, the first and last offsets
	// of the records acknowledged.
	Partitions []PartitionRange `json:"partitions"`
}

// PartitionRange is the offsets one partition received.
type PartitionRange struct {
	Partition   int32 `json:"partition"`
	FirstOffset int64 `json:"first_offset"`
	LastOffset  int64 `json:"last_offset"`
	Records     int64 `json:"records"`
}

// Lines produces one record per line of r to the brokers and waits for all
// of them. On failure it returns what was acknowledged with the first
// error. opts.Topic is created if the cluster auto-creates topics. extra
// are added to franz-go's options.
func Lines(ctx context.Context, brokers []string, r io.Reader, opts Options, extra ...kgo.Opt) (Result, error) {
	if opts.Topic == "" {
		return Result{}, errors.New("produce: no topic")
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID("brokerd-produce"),
		kgo.DefaultProduceTopic(opts.Topic),
		kgo.AllowAutoTopicCreation(),
	}
	if opts.Partition >= 0 {
		base = append(base, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := kgo.NewClient(append(base, extra...)...)
	if err != nil {
		return Result{}, fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	return produceLines(ctx, cl, r, opts)
}

// tracker collects acknowledgements.
type tracker struct {
	mu       sync.Mutex
	res      Result
	parts    map[int32]*PartitionRange
	firstErr error
	progress func(int64)
}

func (t *tracker) ack(r *kgo.Record, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		if t.firstErr == nil {
			t.firstErr = fmt.Errorf("produce to %s: %w", r.Topic, err)
		}
		return
	}
	t.res.Records++
	t.res.Bytes += int64(len(r.Key) + len(r.Value))
	p := t.parts[r.Partition]
	if p == nil {
		p = &PartitionRange{Partition: r.Partition, FirstOffset: r.Offset, LastOffset: r.Offset}
		t.parts[r.Partition] = p
	}
	p.FirstOffset = min(p.FirstOffset, r.Offset)
	p.LastOffset = max(p.LastOffset, r.Offset)
	p.Records++
	if t.progress != nil {
		t.progress(t.res.Records)
	}
}

func (t *tracker) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.firstErr
}

func produceLines(ctx context.Context, cl *kgo.Client, r io.Reader, opts Options) (Result, error) {
	maxLine := opts.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	t := &tracker{res: Result{Topic: opts.Topic}, parts: map[int32]*PartitionRange{}, progress: opts.Progress}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	var readErr error
	for sc.Scan() {
		line++
		if err := t.failed(); err != nil {
			break
		}
		cl.Produce(ctx, Record(sc.Bytes(), opts), t.ack)
	}
	if err := sc.Err(); err != nil {
		readErr = fmt.Errorf("read line %d: %w", line+1, err)
	}
	flushErr := cl.Flush(ctx)
	res := t.result()
	if err := t.failed(); err != nil {
		return res, err
	}
	if readErr != nil {
		return res, readErr
	}
	if flushErr != nil {
		return res, fmt.Errorf("flush: %w", flushErr)
	}
	return res, nil
}

func (t *tracker) result() Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	res := t.res
	res.Partitions = []PartitionRange{}
	for _, p := range t.parts {
		res.Partitions = append(res.Partitions, *p)
	}
	slices.SortFunc(res.Partitions, func(a, b PartitionRange) int { return int(a.Partition) - int(b.Partition) })
	return res
}
