package log

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// checkBatches checks that b is a run of whole, valid batches with
// contiguous offsets, the first holding offset.
func checkBatches(b []byte, offset int64) error {
	first := true
	var next int64
	for len(b) > 0 {
		h, err := ParseBatchHeader(b)
		if err != nil {
			return err
		}
		if h.Size() > int64(len(b)) {
			return errors.New("partial batch")
		}
		if _, err := ValidateBatch(b[:h.Size()], 0); err != nil {
			return err
		}
		if first && (h.BaseOffset > offset || h.NextOffset() <= offset) {
			return errors.New("first batch does not hold the offset")
		}
		if !first && h.BaseOffset != next {
			return errors.New("offsets not contiguous")
		}
		first, next = false, h.NextOffset()
		b = b[h.Size():]
	}
	return nil
}

func TestConcurrentReaders(t *testing.T) {
	cfg := smallConfig()
	cfg.RetentionBytes = 40 << 10
	l := openLog(t, t.TempDir(), cfg)
	const total = 600
	var done atomic.Bool
	finished := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}

	// The writer: appends, retention, DeleteRecords, a truncation, flushes.
	wg.Go(func() {
		defer close(finished)
		defer done.Store(true)
		for i := range total {
			b := simpleBatch(t, 1+i%4, 50+i%200, tsIndex(i))
			if _, err := l.Append(b, tsIndex(i)); err != nil {
				report(err)
				return
			}
			var err error
			switch {
			case i%100 == 99:
				_, err = l.ApplyRetention(tsIndex(i))
			case i%250 == 0:
				err = l.AdvanceStartOffset(min(l.StartOffset()+3, l.EndOffset()))
			case i%333 == 0:
				err = l.Truncate(l.EndOffset() - int64(1+i%4))
			case i == total/2:
				err = l.Flush()
			}
			if err != nil {
				report(err)
				return
			}
		}
	})
	// Readers at random offsets.
	for r := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for !done.Load() {
				start, end := l.StartOffset(), l.EndOffset()
				off := start + rng.Int64N(end-start+1)
				b, err := l.Read(off, int32(rng.IntN(8000)))
				if errors.Is(err, ErrOffsetOutOfRange) && off < l.StartOffset() {
					continue // retention passed it
				}
				if err != nil {
					report(err)
					return
				}
				if len(b) == 0 {
					if off < start || off < l.EndOffset() && off != end {
						report(errors.New("empty read below the end"))
						return
					}
					continue
				}
				if err := checkBatches(b, off); err != nil {
					report(err)
					return
				}
				if _, _, _, err := l.OffsetForTimestamp(tsIndex(rng.IntN(total))); err != nil {
					report(err)
					return
				}
				if off, ts, ok, err := l.MaxTimestampOffset(); err != nil || (ok && ts < 0) {
					report(fmt.Errorf("MaxTimestampOffset() = %d, %d, %v, %v", off, ts, ok, err))
					return
				}
			}
		})
	}
	// A long-polling fetcher following the end.
	wg.Go(func() {
		var seen int64
		for !done.Load() {
			ch := l.Notify()
			if end := l.EndOffset(); end > seen {
				seen = end
				continue
			}
			select {
			case <-ch:
			case <-finished:
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
