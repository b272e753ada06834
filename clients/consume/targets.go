package consume

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// endTargets returns, for each partition that has records between where
// consuming starts and its current end offset, that end offset.
func endTargets(ctx context.Context, cl *kgo.Client, opts Options) (map[string]map[int32]int64, error) {
	adm := kadm.NewClient(cl)
	ends, err := checked(adm.ListEndOffsets(ctx, opts.Topics...))
	if err != nil {
		return nil, fmt.Errorf("end offsets: %w", err)
	}
	starts, err := checked(adm.ListStartOffsets(ctx, opts.Topics...))
	if err != nil {
		return nil, fmt.Errorf("start offsets: %w", err)
	}
	var after kadm.ListedOffsets
	if opts.Offset.Kind == FromTime {
		if after, err = checked(adm.ListOffsetsAfterMilli(ctx, opts.Offset.N, opts.Topics...)); err != nil {
			return nil, fmt.Errorf("offsets after %d: %w", opts.Offset.N, err)
		}
	}
	var committed kadm.OffsetResponses
	if opts.Group != "" {
		if committed, err = adm.FetchOffsets(ctx, opts.Group); err != nil {
			return nil, fmt.Errorf("committed offsets of group %s: %w", opts.Group, err)
		}
	}
	out := map[string]map[int32]int64{}
	var ferr error
	ends.Each(func(e kadm.ListedOffset) {
		s, ok := starts.Lookup(e.Topic, e.Partition)
		if !ok {
			ferr = fmt.Errorf("%s[%d]: no start offset", e.Topic, e.Partition)
			return
		}
		begin := s.Offset
		switch opts.Offset.Kind {
		case FromEnd:
			begin = e.Offset
		case FromOffset:
			begin = min(max(opts.Offset.N, s.Offset), e.Offset)
		case FromRelative:
			begin = max(e.Offset-opts.Offset.N, s.Offset)
		case FromTime:
			begin = e.Offset
			if a, ok := after.Lookup(e.Topic, e.Partition); ok && a.Offset >= 0 {
				begin = a.Offset
			}
		}
		if c, ok := committed.Lookup(e.Topic, e.Partition); ok && c.Err == nil && c.At >= 0 {
			begin = c.At
		}
		if begin < e.Offset {
			if out[e.Topic] == nil {
				out[e.Topic] = map[int32]int64{}
			}
			out[e.Topic][e.Partition] = e.Offset
		}
	})
	return out, ferr
}

// checked turns per-partition errors of a ListOffsets call into an error.
func checked(os kadm.ListedOffsets, err error) (kadm.ListedOffsets, error) {
	if err != nil {
		return nil, err
	}
	var first error
	os.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && first == nil {
			first = fmt.Errorf("%s[%d]: %w", o.Topic, o.Partition, o.Err)
		}
	})
	return os, first
}
