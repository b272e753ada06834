package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consume reads topic from the start of every partition, without a group,
// until want records have arrived, and times it.
func consume(ctx context.Context, seeds []string, topic string, want int64, o Options) (Phase, error) {
	hook := &reqHook{key: apiKeyFetch}
	hook.on.Store(true)
	cl, err := kgo.NewClient(append(clientOpts(seeds, o),
		kgo.WithHooks(hook),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		return Phase{}, fmt.Errorf("consumer client: %w", err)
	}
	defer cl.Close()

	var got, bytes int64
	cpu0, _ := serverCPU(ctx)
	start := time.Now()
	for got < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return Phase{}, fmt.Errorf("after %d of %d records: %w", got, want, err)
		}
		for _, fe := range fs.Errors() {
			return Phase{}, fmt.Errorf("fetch %s[%d] after %d of %d records: %w", fe.Topic, fe.Partition, got, want, fe.Err)
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			got += int64(len(p.Records))
			for _, r := range p.Records {
				bytes += int64(len(r.Value))
			}
		})
	}
	elapsed := time.Since(start)
	cpu1, cpuOK := serverCPU(ctx)
	var used time.Duration
	if cpuOK {
		used = cpu1 - cpu0
	}
	if got != want {
		return Phase{}, fmt.Errorf("read %d records, %d were produced", got, want)
	}
	return Phase{Records: got, Bytes: bytes, Elapsed: elapsed, Requests: hook.summary(), ServerCPU: used}, nil
}
