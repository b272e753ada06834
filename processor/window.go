package processor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Event-time windows. A window stage gives each record its event time (the
// time: expression, or the record timestamp) and the windows it falls in;
// the aggregate after it keeps one aggregate per key and window and emits
// it once, when the watermark passes the window's end:
//
//	{"window_start": MS, "window_end": MS, "count": N}
//
// The watermark is the least, over the input partitions that have had a
// record, of the greatest event time seen there, minus the lateness; a
// partition that never had a record does not hold it back, nor does one
// idle (no greater event time) for the window's idle: duration, when set;
// when every partition is idle, the watermark is the greatest event time
// seen, minus the lateness.
// A record whose
// event time is behind the watermark goes to <name>.late unchanged. The
// greatest event times are state, so the watermark survives restarts and
// leader changes.

// errLate marks a record behind the watermark: the runner sends it to the
// late topic.
var errLate = errors.New("behind the watermark")

type windowOp struct {
	kind                   string
	size, slide, gap, late int64 // ms
	time                   *program
	// idle: a partition whose greatest event time has not grown for this
	// long (on the leader's clock) stops holding the watermark back.
	idle int64
	// times caches, for the step under way, each input partition's
	// entry (loaded from the state once per step, then kept up to date),
	// so a record costs no scan of the state.
	times    map[string]partTime
	floor    int64
	hasFloor bool
}

func (o *windowOp) reset() { o.times = nil }

func compileWindow(w *WindowSpec) (Operator, error) {
	o := &windowOp{kind: w.Type, size: ms(w.Size), slide: ms(w.Slide), gap: ms(w.Gap), late: ms(w.Lateness), idle: ms(w.Idle)}
	switch w.Type {
	case "tumbling":
		if o.size <= 0 || o.slide != 0 || o.gap != 0 {
			return nil, errors.New("a tumbling window takes size (and no slide or gap)")
		}
		o.slide = o.size
	case "hopping":
		if o.size <= 0 || o.slide <= 0 || o.slide > o.size || o.gap != 0 {
			return nil, errors.New("a hopping window takes size and slide (0 < slide <= size), and no gap")
		}
		if o.size/o.slide > 1000 {
			return nil, errors.New("a hopping window may not overlap more than 1000 windows (size/slide)")
		}
	case "session":
		if o.gap <= 0 || o.size != 0 || o.slide != 0 {
			return nil, errors.New("a session window takes gap (and no size or slide)")
		}
	default:
		return nil, fmt.Errorf("window type %q (want tumbling, hopping or session)", w.Type)
	}
	if o.late < 0 || o.idle < 0 {
		return nil, errors.New("lateness and idle may not be negative")
	}
	if w.Time != "" {
		prog, err := compileExpr(w.Time)
		if err != nil {
			return nil, fmt.Errorf("time expression %q: %w", w.Time, err)
		}
		o.time = prog
	}
	return o, nil
}

func ms(d Duration) int64 { return time.Duration(d).Milliseconds() }

// eventTime is the record's event time in ms.
func (o *windowOp) eventTime(r *Record) (int64, error) {
	if o.time == nil {
		return r.Timestamp, nil
	}
	v, err := o.time.run(env(r))
	if err != nil {
		return 0, fmt.Errorf("window time: %w", err)
	}
	f, err := toFloat(v)
	if err != nil {
		return 0, fmt.Errorf("window time: %w", err)
	}
	// Milliseconds within about ±30,000 years: anything else is a wrong
	// field, and would pin a partition's event time for good.
	if math.IsNaN(f) || math.Abs(f) > 1e15 {
		return 0, fmt.Errorf("window time %v is out of range", f)
	}
	return int64(f), nil
}

const wmPrefix = "wm/"

// partTime is one input partition's entry: the greatest event time seen
// there and the leader's clock when it last grew ("<event ms> <wall ms>").
type partTime struct{ event, wall int64 }

func parsePartTime(v []byte) (partTime, bool) {
	ev, wall, _ := strings.Cut(string(v), " ")
	e, err := strconv.ParseInt(ev, 10, 64)
	if err != nil {
		return partTime{}, false
	}
	w, _ := strconv.ParseInt(wall, 10, 64)
	return partTime{e, w}, true
}

// loadTimes reads every partition's entry.
func loadTimes(st State) (map[string]partTime, error) {
	out := map[string]partTime{}
	err := st.Scan([]byte(wmPrefix), func(k, v []byte) bool {
		if pt, ok := parsePartTime(v); ok {
			out[string(k)] = pt
		}
		return true
	})
	return out, err
}

// watermarkOf is the least greatest event time over the partitions that
// are not idle at now, minus the lateness, and never below the floor (the
// greatest watermark a step has committed); ok is false when there is
// none, or when a partition with unread input has no event time yet.
func (o *windowOp) watermarkOf(times map[string]partTime, now int64, unread map[string]bool, floor int64, hasFloor bool) (int64, bool) {
	for p := range unread {
		if _, ok := times[wmPrefix+p]; !ok {
			return floor, hasFloor
		}
	}
	var wm, greatest int64
	seen, any := false, false
	for k, pt := range times {
		if !any || pt.event > greatest {
			greatest, any = pt.event, true
		}
		// A partition with input waiting is not idle, however long ago
		// its last record was read (a paused or lagging processor).
		if o.idle > 0 && now-pt.wall > o.idle && !unread[strings.TrimPrefix(k, wmPrefix)] {
			continue
		}
		if !seen || pt.event < wm {
			wm, seen = pt.event, true
		}
	}
	if !seen && any {
		// Every partition is idle, none with input waiting: none holds
		// the watermark back, so it reaches the greatest event time.
		wm, seen = greatest, true
	}
	switch {
	case seen && hasFloor:
		return max(wm-o.late, floor), true
	case seen:
		return wm - o.late, true
	}
	return floor, hasFloor
}

// floorKey holds the greatest watermark a step has committed: the
// watermark never goes back, even when a partition joins with older
// event times, so no window is emitted twice.
const floorKey = "wf"

func loadFloor(st State) (int64, bool, error) {
	v, ok, err := st.Get([]byte(floorKey))
	if err != nil || !ok {
		return 0, false, err
	}
	f, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("decode watermark floor: %w", err)
	}
	return f, true, nil
}

// stepUnread is the step's partitions with unread input.
func stepUnread(st State) map[string]bool {
	if ss, ok := st.(stageState); ok {
		return ss.s.unread
	}
	return nil
}

// watermark is the watermark the committed and pending state give; it
// raises the floor to it.
func (o *windowOp) watermark(st State) (int64, bool, error) {
	times, err := loadTimes(st)
	if err != nil {
		return 0, false, err
	}
	floor, hasFloor, err := loadFloor(st)
	if err != nil {
		return 0, false, err
	}
	wm, ok := o.watermarkOf(times, stepNow(st), stepUnread(st), floor, hasFloor)
	if ok && (!hasFloor || wm > floor) {
		st.Put([]byte(floorKey), []byte(strconv.FormatInt(wm, 10)))
	}
	return wm, ok, nil
}

// stepNow is the leader's clock at the step under way (0 outside one).
func stepNow(st State) int64 {
	if ss, ok := st.(stageState); ok {
		return ss.s.now
	}
	return 0
}

func (o *windowOp) Process(st State, r Record, emit func(Record)) error {
	t, err := o.eventTime(&r)
	if err != nil {
		return err
	}
	if o.times == nil {
		if o.times, err = loadTimes(st); err != nil {
			return err
		}
		if o.floor, o.hasFloor, err = loadFloor(st); err != nil {
			return err
		}
	}
	now := stepNow(st)
	if wm, ok := o.watermarkOf(o.times, now, stepUnread(st), o.floor, o.hasFloor); ok && t < wm {
		return errLate
	}
	key := wmPrefix + r.Topic + "/" + strconv.Itoa(int(r.Partition))
	if prev, ok := o.times[key]; !ok || t > prev.event {
		o.times[key] = partTime{t, now}
		st.Put([]byte(key), []byte(strconv.FormatInt(t, 10)+" "+strconv.FormatInt(now, 10)))
	}
	r.Timestamp = t
	switch o.kind {
	case "session":
		r.Window = &Window{Start: t, End: t + o.gap}
		emit(r)
	default:
		// Every window [start, start+size) holding t, start a multiple
		// of slide.
		first := floorDiv(t, o.slide) * o.slide
		for start := first; start > t-o.size; start -= o.slide {
			c := r
			c.Window = &Window{Start: start, End: start + o.size}
			emit(c)
		}
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// windowAggOp keeps one aggregate per key and window, and emits each when
// the watermark passes the window's end. State: "w/<key>\x00<start>" holds
// the window's end and aggregate; "e/<end><key>\x00<start>" indexes the
// windows by end, so that a flush reads only the ones due.
type windowAggOp struct {
	agg    aggregateOp
	window *windowOp
	// windowStage is the window stage's index, whose state holds the
	// event times the watermark comes from.
	windowStage int
}

type windowEntry struct {
	End int64    `json:"end"`
	Agg aggState `json:"agg"`
}

// orderedTime encodes t so that byte order is time order.
func orderedTime(t int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t)^(1<<63)) }

func fromOrdered(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

// keyPart is a key with its length first, so that one key's entries are
// never a prefix of another key's.
func keyPart(key []byte) []byte { return append(binary.AppendUvarint(nil, uint64(len(key))), key...) }

func windowKey(key []byte, start int64) []byte {
	return append(append([]byte("w/"), keyPart(key)...), orderedTime(start)...)
}

func indexKey(end int64, key []byte, start int64) []byte {
	b := append([]byte("e/"), orderedTime(end)...)
	return append(append(b, keyPart(key)...), orderedTime(start)...)
}

func loadWindow(st State, k []byte) (windowEntry, bool, error) {
	v, ok, err := st.Get(k)
	if err != nil || !ok {
		return windowEntry{}, false, err
	}
	e, err := decodeWindow(v)
	if err != nil {
		return e, false, fmt.Errorf("decode window state: %w", err)
	}
	return e, true, nil
}

func putWindow(st State, key []byte, start int64, e windowEntry) {
	st.Put(windowKey(key, start), encodeWindow(&e))
	st.Put(indexKey(e.End, key, start), []byte{})
}

func dropWindow(st State, key []byte, start, end int64) {
	st.Delete(windowKey(key, start))
	st.Delete(indexKey(end, key, start))
}

func (o *windowAggOp) Process(st State, r Record, _ func(Record)) error {
	if r.Window == nil {
		return errors.New("a windowed aggregate got a record without a window")
	}
	var add aggState
	if err := o.agg.add(&add, &r); err != nil {
		return err
	}
	start, end := r.Window.Start, r.Window.End
	if o.window.kind == "session" {
		// Merge every session of this key that the new one touches.
		var err error
		if start, end, err = o.mergeSessions(st, r.Key, start, end, &add); err != nil {
			return err
		}
	} else if cur, ok, err := loadWindow(st, windowKey(r.Key, start)); err != nil {
		return err
	} else if ok {
		// The window exists, and so does its index entry.
		mergeAgg(&add, &cur.Agg)
		e := windowEntry{End: end, Agg: add}
		st.Put(windowKey(r.Key, start), encodeWindow(&e))
		return nil
	}
	putWindow(st, r.Key, start, windowEntry{End: end, Agg: add})
	return nil
}

// mergeSessions folds the key's sessions that overlap [start, end) into
// add and removes them, returning the merged session's bounds.
func (o *windowAggOp) mergeSessions(st State, key []byte, start, end int64, add *aggState) (int64, int64, error) {
	prefix := append([]byte("w/"), keyPart(key)...)
	type found struct {
		start int64
		e     windowEntry
	}
	var merged []found
	var derr error
	err := st.Scan(prefix, func(k, v []byte) bool {
		s := fromOrdered(k[len(prefix):])
		var e windowEntry
		if e, derr = decodeWindow(v); derr != nil {
			return false
		}
		if s <= end && start <= e.End {
			merged = append(merged, found{s, e})
		}
		return true
	})
	if err = errors.Join(err, derr); err != nil {
		return 0, 0, err
	}
	for _, m := range merged {
		start, end = min(start, m.start), max(end, m.e.End)
		mergeAgg(add, &m.e.Agg)
		dropWindow(st, key, m.start, m.e.End)
	}
	return start, end, nil
}

// mergeAgg folds b into a.
func mergeAgg(a, b *aggState) {
	if b.Count == 0 {
		return
	}
	if a.Count == 0 {
		*a = *b
		return
	}
	a.Count += b.Count
	a.Sum += b.Sum
	a.Min, a.Max = min(a.Min, b.Min), max(a.Max, b.Max)
}

func (o *windowAggOp) Flush(st State, emit func(Record)) error {
	return o.flushSome(st, emit, math.MaxInt, func() bool { return false })
}

// flushSome emits the windows the watermark has passed, oldest end first,
// at most max of them and until full says the step is full.
func (o *windowAggOp) flushSome(st State, emit func(Record), max int, full func() bool) error {
	if max <= 0 {
		return nil
	}
	ss, ok := st.(stageState)
	if !ok {
		return errors.New("a windowed aggregate needs the runtime's state")
	}
	wm, seen, err := o.window.watermark(stageState{ss.s, stagePrefix(o.windowStage)})
	if err != nil || !seen {
		return err
	}
	type due struct {
		key        []byte
		start, end int64
	}
	var dues []due
	keyBytes := 0
	err = st.Scan([]byte("e/"), func(k, _ []byte) bool {
		end := fromOrdered(k[2:10])
		if end > wm {
			return false
		}
		// The rest is the key's length, the key and the start (8 bytes).
		rest := k[10:]
		n, w := binary.Uvarint(rest)
		if w <= 0 || uint64(len(rest)-w) != n+8 {
			return true
		}
		dues = append(dues, due{append([]byte(nil), rest[w:w+int(n)]...), fromOrdered(rest[w+int(n):]), end})
		keyBytes += int(n)
		return len(dues) < max && keyBytes < stepOutputBytes
	})
	if err != nil {
		return err
	}
	for _, d := range dues {
		if full() {
			break
		}
		e, ok, err := loadWindow(st, windowKey(d.key, d.start))
		if err != nil {
			return err
		}
		if ok {
			v := o.agg.result(&e.Agg)
			v["window_start"], v["window_end"] = d.start, d.end
			b, _ := appendJSON(nil, v)
			emit(Record{Key: d.key, Value: b, Timestamp: d.end - 1})
		}
		dropWindow(st, d.key, d.start, d.end)
	}
	return nil
}
