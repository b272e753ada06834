package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// SeekKind says where SeekGroup moves a group's offsets.
type SeekKind int

// Seek targets.
const (
	SeekStart  SeekKind = iota // each partition's log start offset
	SeekEnd                    // each partition's end offset
	SeekOffset                 // one offset for every partition, clamped into the log
	SeekTime                   // the first offset at or after a time
)

// SeekTarget is where to move a group's offsets.
type SeekTarget struct {
	Kind   SeekKind
	Offset int64     // SeekOffset
	Time   time.Time // SeekTime
}

func (t SeekTarget) String() string {
	switch t.Kind {
	case SeekStart:
		return "start"
	case SeekEnd:
		return "end"
	case SeekOffset:
		return strconv.FormatInt(t.Offset, 10)
	}
	return t.Time.UTC().Format(time.RFC3339Nano)
}

// ParseSeekTarget reads "start", "end", an offset (a non-negative integer)
// or a time: RFC 3339 ("2024-05-01T12:00:00Z") or "@" and Unix
// milliseconds ("@1714564800000").
func ParseSeekTarget(s string) (SeekTarget, error) {
	switch s {
	case "start", "earliest", "beginning":
		return SeekTarget{Kind: SeekStart}, nil
	case "end", "latest":
		return SeekTarget{Kind: SeekEnd}, nil
	}
	if ms, ok := strings.CutPrefix(s, "@"); ok {
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || n < 0 {
			return SeekTarget{}, fmt.Errorf("seek target %q: want @ and Unix milliseconds", s)
		}
		return SeekTarget{Kind: SeekTime, Time: time.UnixMilli(n)}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return SeekTarget{}, fmt.Errorf("seek target %q: an offset cannot be negative", s)
		}
		return SeekTarget{Kind: SeekOffset, Offset: n}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return SeekTarget{Kind: SeekTime, Time: t}, nil
	}
	return SeekTarget{}, fmt.Errorf("seek target %q: want start, end, an offset, an RFC 3339 time or @unix-millis", s)
}

// SeekedPartition is one partition a seek moved.
type SeekedPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// From is the offset committed before, -1 if none.
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// seekChunk is how many partitions one OffsetCommit carries, so progress
// can be reported on large groups.
const seekChunk = 500

// SeekGroup commits new offsets for a group that has no active members.
// topics limits the seek to those topics (all their partitions); with none,
// it moves every partition the group has committed. progress, if not nil,
// is called as partitions are committed.
func (c *Client) SeekGroup(ctx context.Context, group string, to SeekTarget, topics []string, progress func(done, total int)) ([]SeekedPartition, error) {
	if err := c.CheckGroupSupport(ctx); err != nil {
		return nil, err
	}
	gs, err := c.adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("seek group %s: describe: %w", group, err)
	}
	if g, ok := gs[group]; ok {
		if g.Err != nil {
			return nil, fmt.Errorf("seek group %s: describe: %w", group, g.Err)
		}
		if len(g.Members) > 0 {
			return nil, fmt.Errorf("seek group %s: it is %s with %d active member(s); stop its consumers first", group, g.State, len(g.Members))
		}
	}
	current, err := c.adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("seek group %s: fetch offsets: %w", group, err)
	}
	if err := current.Error(); err != nil {
		return nil, fmt.Errorf("seek group %s: fetch offsets: %w", group, err)
	}
	if len(topics) == 0 {
		topics = current.Partitions().Topics()
		if len(topics) == 0 {
			return nil, fmt.Errorf("seek group %s: it has no committed offsets; name the topics to seek", group)
		}
	}
	slices.Sort(topics)
	targets, err := c.seekTargets(ctx, to, topics)
	if err != nil {
		return nil, fmt.Errorf("seek group %s: %w", group, err)
	}
	var out []SeekedPartition
	for _, o := range targets.Sorted() {
		from := int64(-1)
		if cur, ok := current.Lookup(o.Topic, o.Partition); ok && cur.Err == nil {
			from = cur.At
		}
		out = append(out, SeekedPartition{Topic: o.Topic, Partition: o.Partition, From: from, To: o.At})
	}
	for i := 0; i < len(out); i += seekChunk {
		chunk := make(kadm.Offsets)
		for _, p := range out[i:min(i+seekChunk, len(out))] {
			chunk.AddOffset(p.Topic, p.Partition, p.To, -1)
		}
		rs, err := c.adm.CommitOffsets(ctx, group, chunk)
		if err == nil {
			err = rs.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("seek group %s: commit: %w", group, err)
		}
		if progress != nil {
			progress(min(i+seekChunk, len(out)), len(out))
		}
	}
	return out, nil
}

// seekTargets computes the offset to commit for every partition of topics.
func (c *Client) seekTargets(ctx context.Context, to SeekTarget, topics []string) (kadm.Offsets, error) {
	starts, err := listed(c.adm.ListStartOffsets(ctx, topics...))
	if err != nil {
		return nil, fmt.Errorf("start offsets: %w", err)
	}
	ends, err := listed(c.adm.ListEndOffsets(ctx, topics...))
	if err != nil {
		return nil, fmt.Errorf("end offsets: %w", err)
	}
	var after kadm.ListedOffsets
	if to.Kind == SeekTime {
		if after, err = listed(c.adm.ListOffsetsAfterMilli(ctx, to.Time.UnixMilli(), topics...)); err != nil {
			return nil, fmt.Errorf("offsets after %s: %w", to, err)
		}
	}
	out := make(kadm.Offsets)
	for _, t := range topics {
		if len(starts[t]) == 0 {
			return nil, fmt.Errorf("topic %s: no partitions found (does it exist?)", t)
		}
	}
	var all []kadm.ListedOffset
	starts.Each(func(o kadm.ListedOffset) { all = append(all, o) })
	for _, s := range all {
		e, ok := ends.Lookup(s.Topic, s.Partition)
		if !ok {
			return nil, fmt.Errorf("%s[%d]: no end offset", s.Topic, s.Partition)
		}
		var at int64
		switch to.Kind {
		case SeekStart:
			at = s.Offset
		case SeekEnd:
			at = e.Offset
		case SeekOffset:
			at = min(max(to.Offset, s.Offset), e.Offset)
		case SeekTime:
			at = e.Offset // nothing at or after the time: the end
			if a, ok := after.Lookup(s.Topic, s.Partition); ok && a.Offset >= 0 {
				at = a.Offset
			}
		}
		out.AddOffset(s.Topic, s.Partition, at, -1)
	}
	return out, nil
}

// listed turns per-partition errors of a ListOffsets call into an error.
func listed(os kadm.ListedOffsets, err error) (kadm.ListedOffsets, error) {
	if err != nil {
		return nil, err
	}
	var errs []error
	os.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: %w", o.Topic, o.Partition, o.Err))
		}
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return os, nil
}
