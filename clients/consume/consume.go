package consume

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Options configure Run.
type Options struct {
	Topics []string
	// Offset is where to start: in a group, only for partitions the group
	// has not committed.
	Offset Offset
	// Count stops after this many records; 0 means no limit.
	Count int64
	// Group consumes as a member of this consumer group, committing the
	// offsets of the records delivered; "" consumes every partition
	// without a group.
	Group string
	// ExitAtEnd stops once every partition has been read up to the end
	// offset it had when Run started (kcat -e).
	ExitAtEnd bool
	// AfterPoll, if not nil, is called after the records of each poll have
	// been given to fn, before waiting for more: a place to flush output.
	AfterPoll func()
}

// Run consumes records and calls fn for each, in order per partition,
// until opts.Count records, the end (opts.ExitAtEnd), ctx's end, or an
// error from fn or from fetching. It returns how many records fn was given.
// When ctx ends, the error is ctx's. In a group, the offsets after the
// records given to fn are committed before Run returns. extra are added to
// franz-go's options.
func Run(ctx context.Context, brokers []string, opts Options, fn func(*kgo.Record) error, extra ...kgo.Opt) (int64, error) {
	if len(opts.Topics) == 0 {
		return 0, errors.New("consume: no topic")
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID("brokerd-consume"),
		kgo.ConsumeTopics(opts.Topics...),
		kgo.ConsumeResetOffset(opts.Offset.kgo()),
		// Like kcat (librdkafka's fetch.wait.max.ms): an idle fetch
		// returns within half a second, so stopping is prompt on both
		// ends. extra may override it.
		kgo.FetchMaxWait(500 * time.Millisecond),
	}
	if opts.Group != "" {
		base = append(base, kgo.ConsumerGroup(opts.Group), kgo.AutoCommitMarks())
	}
	cl, err := kgo.NewClient(append(base, extra...)...)
	if err != nil {
		return 0, fmt.Errorf("kafka client: %w", err)
	}
	c := &consumer{cl: cl, opts: opts, fn: fn}
	n, err := c.run(ctx)
	if opts.Group != "" {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if cerr := cl.CommitMarkedOffsets(cctx); cerr != nil && err == nil {
			err = fmt.Errorf("commit offsets of group %s: %w", opts.Group, cerr)
		}
		cancel()
	}
	cl.Close()
	return n, err
}

type consumer struct {
	cl   *kgo.Client
	opts Options
	fn   func(*kgo.Record) error
	// pending maps each partition still to be read to its end offset
	// (ExitAtEnd only).
	pending map[string]map[int32]int64
}

func (c *consumer) run(ctx context.Context) (int64, error) {
	if c.opts.ExitAtEnd {
		p, err := endTargets(ctx, c.cl, c.opts)
		if err != nil {
			return 0, err
		}
		c.pending = p
	}
	var n int64
	for {
		if c.opts.Count > 0 && n >= c.opts.Count {
			return n, nil
		}
		if c.opts.ExitAtEnd && len(c.pending) == 0 {
			return n, nil
		}
		var fs kgo.Fetches
		if c.opts.Count > 0 {
			fs = c.cl.PollRecords(ctx, int(min(c.opts.Count-n, 1<<20)))
		} else {
			fs = c.cl.PollFetches(ctx)
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if fs.IsClientClosed() {
			return n, errors.New("consume: client closed")
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("fetch %s[%d]: %w", t, p, err)
			}
		})
		if ferr != nil {
			return n, ferr
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			if c.opts.Count > 0 && n >= c.opts.Count {
				break
			}
			if err := c.fn(r); err != nil {
				return n, err
			}
			n++
			if c.opts.Group != "" {
				c.cl.MarkCommitRecords(r)
			}
			c.reached(r)
		}
		if c.opts.AfterPoll != nil {
			c.opts.AfterPoll()
		}
	}
}

// reached notes that r's partition has been read up to r.
func (c *consumer) reached(r *kgo.Record) {
	if c.pending == nil {
		return
	}
	ps := c.pending[r.Topic]
	if end, ok := ps[r.Partition]; ok && r.Offset+1 >= end {
		delete(ps, r.Partition)
		if len(ps) == 0 {
			delete(c.pending, r.Topic)
		}
	}
}
