package processor

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/expr-lang/expr"
)

// pipeline is a compiled spec: its operators in order.
type pipeline struct {
	ops []Operator
}

// resetter is an operator that holds something for the step under way
// (what to emit at its end), dropped when a step starts again.
type resetter interface{ reset() }

func (p *pipeline) reset() {
	for _, op := range p.ops {
		if r, ok := op.(resetter); ok {
			r.reset()
		}
	}
}

// compile builds a spec's operators, naming the stage in any error.
func compile(s *Spec) (*pipeline, error) {
	p := &pipeline{}
	for i, st := range s.Stages {
		op, err := compileStage(&st)
		if err != nil {
			return nil, fmt.Errorf("processor %s: stage %d (%s): %w", s.Name, i+1, st.kind(), err)
		}
		// An aggregate right after a window aggregates per window.
		if agg, ok := op.(*aggregateOp); ok && i > 0 {
			if w, ok := p.ops[i-1].(*windowOp); ok {
				op = &windowAggOp{agg: *agg, window: w, windowStage: i - 1}
			}
		}
		if _, ok := op.(*windowOp); ok && (i+1 >= len(s.Stages) || s.Stages[i+1].Aggregate == nil) {
			return nil, fmt.Errorf("processor %s: stage %d (window): a window must be followed by an aggregate", s.Name, i+1)
		}
		p.ops = append(p.ops, op)
	}
	return p, nil
}

func (st *Stage) kind() string {
	var kinds []string
	if st.Filter != "" {
		kinds = append(kinds, "filter")
	}
	if st.Map != nil {
		kinds = append(kinds, "map")
	}
	if st.KeyBy != "" {
		kinds = append(kinds, "key_by")
	}
	if st.Window != nil {
		kinds = append(kinds, "window")
	}
	if st.Aggregate != nil {
		kinds = append(kinds, "aggregate")
	}
	if st.Plugin != "" {
		kinds = append(kinds, "plugin "+st.Plugin)
	}
	if len(kinds) == 0 {
		return "empty"
	}
	return strings.Join(kinds, "+")
}

func compileStage(st *Stage) (Operator, error) {
	kind := st.kind()
	if strings.Contains(kind, "+") {
		return nil, fmt.Errorf("one stage sets %s; give each its own stage", kind)
	}
	if st.Config != nil && st.Plugin == "" {
		return nil, errors.New("config is for plugin stages")
	}
	switch {
	case st.Filter != "":
		prog, err := compileExpr(st.Filter, expr.AsBool())
		if err != nil {
			return nil, fmt.Errorf("expression %q: %w", st.Filter, err)
		}
		return &filterOp{prog: prog}, nil
	case st.Map != nil:
		return compileMap(st.Map)
	case st.KeyBy != "":
		prog, err := compileExpr(st.KeyBy)
		if err != nil {
			return nil, fmt.Errorf("expression %q: %w", st.KeyBy, err)
		}
		return &keyByOp{prog: prog}, nil
	case st.Window != nil:
		return compileWindow(st.Window)
	case st.Aggregate != nil:
		return compileAggregate(st.Aggregate)
	case st.Plugin != "":
		f, ok := lookupPlugin(st.Plugin)
		if !ok {
			return nil, fmt.Errorf("unknown plugin %q (this brokerd has: %s)", st.Plugin, strings.Join(Plugins(), ", "))
		}
		op, err := f(st.Config)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		return op, nil
	}
	return nil, errors.New("unknown or empty stage (want filter, map, key_by, window, aggregate or plugin)")
}

// filterOp passes the records its expression is true for.
type filterOp struct{ prog *program }

func (o *filterOp) Process(_ State, r Record, emit func(Record)) error {
	ok, err := o.prog.run(env(&r))
	if err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	if ok == true {
		emit(r)
	}
	return nil
}

// mapOp rewrites a record's key and value.
type mapOp struct{ key, value *program }

func compileMap(m *MapSpec) (Operator, error) {
	if m.Key == "" && m.Value == "" {
		return nil, errors.New("map sets neither key nor value")
	}
	o := &mapOp{}
	var err error
	if m.Key != "" {
		if o.key, err = compileExpr(m.Key); err != nil {
			return nil, fmt.Errorf("key expression %q: %w", m.Key, err)
		}
	}
	if m.Value != "" {
		if o.value, err = compileExpr(m.Value); err != nil {
			return nil, fmt.Errorf("value expression %q: %w", m.Value, err)
		}
	}
	return o, nil
}

func (o *mapOp) Process(_ State, r Record, emit func(Record)) error {
	e := env(&r)
	out := r
	if o.key != nil {
		v, err := o.key.run(e)
		if err != nil {
			return fmt.Errorf("map key: %w", err)
		}
		if out.Key, err = toBytes(v); err != nil {
			return fmt.Errorf("map key: %w", err)
		}
	}
	if o.value != nil {
		v, err := o.value.run(e)
		if err != nil {
			return fmt.Errorf("map value: %w", err)
		}
		if out.Value, err = toBytes(v); err != nil {
			return fmt.Errorf("map value: %w", err)
		}
	}
	emit(out)
	return nil
}

// keyByOp sets the record's key, which groups it for an aggregate.
type keyByOp struct{ prog *program }

func (o *keyByOp) Process(_ State, r Record, emit func(Record)) error {
	v, err := o.prog.run(env(&r))
	if err != nil {
		return fmt.Errorf("key_by: %w", err)
	}
	if r.Key, err = toBytes(v); err != nil {
		return fmt.Errorf("key_by: %w", err)
	}
	emit(r)
	return nil
}

// aggState is one key's aggregate as stored.
type aggState struct {
	Count int64   `json:"count"`
	Sum   float64 `json:"sum,omitempty"`
	Min   float64 `json:"min,omitempty"`
	Max   float64 `json:"max,omitempty"`
}

// aggregateOp keeps one aggregate per key and, at the end of a step,
// emits the new value of each key that changed: {"count": N} (or "sum",
// "min", "max", "avg").
type aggregateOp struct {
	op      string
	of      *program
	changed map[string]int64 // key -> timestamp of its latest record
}

var aggOps = map[string]bool{"count": true, "sum": true, "min": true, "max": true, "avg": true}

func compileAggregate(a *AggregateSpec) (*aggregateOp, error) {
	if !aggOps[a.Op] {
		return nil, fmt.Errorf("op %q (want count, sum, min, max or avg)", a.Op)
	}
	var of *program
	switch {
	case a.Op == "count" && a.Of != "":
		return nil, errors.New("count takes no of:")
	case a.Op != "count" && a.Of == "":
		return nil, fmt.Errorf("%s needs of: EXPR", a.Op)
	case a.Of != "":
		var err error
		if of, err = compileExpr(a.Of); err != nil {
			return nil, fmt.Errorf("of expression %q: %w", a.Of, err)
		}
	}
	return &aggregateOp{op: a.Op, of: of, changed: map[string]int64{}}, nil
}

// add folds r into s.
func (o *aggregateOp) add(s *aggState, r *Record) error {
	x := 0.0
	if o.of != nil {
		v, err := o.of.run(env(r))
		if err != nil {
			return fmt.Errorf("aggregate of: %w", err)
		}
		if x, err = toFloat(v); err != nil {
			return fmt.Errorf("aggregate of: %w", err)
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("aggregate of: %v", x)
		}
	}
	if s.Count == 0 {
		s.Min, s.Max = x, x
	}
	s.Count++
	s.Sum += x
	s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	return nil
}

// result is what the aggregate emits.
func (o *aggregateOp) result(s *aggState) map[string]any {
	switch o.op {
	case "sum":
		return map[string]any{"sum": s.Sum}
	case "min":
		return map[string]any{"min": s.Min}
	case "max":
		return map[string]any{"max": s.Max}
	case "avg":
		return map[string]any{"avg": s.Sum / float64(s.Count)}
	}
	return map[string]any{"count": s.Count}
}

func loadAgg(st State, key []byte) (aggState, error) {
	v, ok, err := st.Get(key)
	if err != nil || !ok {
		return aggState{}, err
	}
	s, err := decodeAgg(v)
	if err != nil {
		return s, fmt.Errorf("decode aggregate of %q: %w", key, err)
	}
	return s, nil
}

func (o *aggregateOp) Process(st State, r Record, _ func(Record)) error {
	s, err := loadAgg(st, r.Key)
	if err != nil {
		return err
	}
	if err := o.add(&s, &r); err != nil {
		return err
	}
	st.Put(r.Key, encodeAgg(&s))
	o.changed[string(r.Key)] = max(o.changed[string(r.Key)], r.Timestamp)
	return nil
}

func (o *aggregateOp) reset() { clear(o.changed) }

func (o *aggregateOp) Flush(st State, emit func(Record)) error {
	for k, ts := range o.changed {
		s, err := loadAgg(st, []byte(k))
		if err != nil {
			return err
		}
		v, _ := appendJSON(nil, o.result(&s))
		emit(Record{Key: []byte(k), Value: v, Timestamp: ts})
	}
	clear(o.changed)
	return nil
}
