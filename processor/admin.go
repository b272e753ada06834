package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/topic"
)

// Admin is what deploying and describing processors needs of the store; a
// *raftstore.Store is one.
type Admin interface {
	Store
	CreateTopic(ctx context.Context, name string, id [16]byte, partitions int32, configs map[string]string) error
	DeployProcessor(ctx context.Context, r raftstore.DeployRequest) (uint64, error)
	ProcessorStateSize(name string) (int, error)
}

// maxSpecBytes is the largest spec the store keeps.
const maxSpecBytes = 1 << 20

// ErrBadSpec wraps every reason a spec is refused (an HTTP 400).
var ErrBadSpec = errors.New("bad processor spec")

// Deploy validates every spec in data (YAML documents, a JSON object or a
// JSON array) and deploys them: the output, dead-letter and late topics
// are created when missing, with as many partitions as the first input.
// Nothing is deployed unless every spec is valid.
func Deploy(ctx context.Context, a Admin, data []byte) ([]Spec, error) {
	specs, err := ParseSpecs(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	raws := make([][]byte, len(specs))
	for i := range specs {
		s := &specs[i]
		if _, exists := a.Processor(s.Name); exists {
			return nil, fmt.Errorf("%w: processor %s: %w", ErrBadSpec, s.Name, raftstore.ErrProcessorExists)
		}
		for _, other := range specs[:i] {
			if other.Name == s.Name {
				return nil, fmt.Errorf("%w: processor %s is defined twice", ErrBadSpec, s.Name)
			}
		}
		for _, in := range s.Inputs {
			if _, ok := a.Topic(in); !ok {
				return nil, fmt.Errorf("%w: processor %s: input topic %s does not exist", ErrBadSpec, s.Name, in)
			}
		}
		raw, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("%w: processor %s: encode spec: %w", ErrBadSpec, s.Name, err)
		}
		if len(raw) > maxSpecBytes {
			return nil, fmt.Errorf("%w: processor %s: a spec of %d bytes (at most %d)", ErrBadSpec, s.Name, len(raw), maxSpecBytes)
		}
		raws[i] = raw
	}
	for i := range specs {
		s := &specs[i]
		first, _ := a.Topic(s.Inputs[0])
		outputs := []string{s.Output, s.DLQTopic(), s.LateTopic()}
		for _, name := range outputs {
			if _, ok := a.Topic(name); ok {
				continue
			}
			err := a.CreateTopic(ctx, name, topic.NewID(), first.Partitions, nil)
			if err != nil && !errors.Is(err, raftstore.ErrTopicExists) {
				return nil, fmt.Errorf("processor %s: create topic %s: %w", s.Name, name, err)
			}
		}
		_, err := a.DeployProcessor(ctx, raftstore.DeployRequest{Name: s.Name, Spec: raws[i], Inputs: s.Inputs, Outputs: outputs,
			FromLatest: strings.EqualFold(s.Start, "latest")})
		if err != nil {
			return nil, fmt.Errorf("processor %s: %w", s.Name, err)
		}
	}
	return specs, nil
}

// Description is a processor's status as the admin API shows it.
type Description struct {
	Name         string           `json:"name"`
	State        string           `json:"state"` // running, paused, stopped (not leader), error
	Inputs       []string         `json:"inputs"`
	Output       string           `json:"output"`
	Generation   uint64           `json:"generation"`
	Offsets      map[string]int64 `json:"offsets"`
	Lag          int64            `json:"lag"`
	RecordsIn    int64            `json:"records_in"`
	RecordsOut   int64            `json:"records_out"`
	DLQ          int64            `json:"dlq"`
	Late         int64            `json:"late"`
	Steps        int64            `json:"steps"`
	StateEntries int              `json:"state_entries"`
	LastStepMs   int64            `json:"last_step_ms"`
	LastError    string           `json:"last_error,omitempty"`
	Spec         json.RawMessage  `json:"spec"`
}

// Describe reports processor p; m may be nil (the runtime is elsewhere).
func Describe(a Admin, m *Manager, p *raftstore.ProcessorInfo) Description {
	var spec Spec
	_ = json.Unmarshal(p.Spec, &spec)
	d := Description{Name: p.Name, Inputs: p.Inputs, Output: spec.Output, Generation: p.Generation, Offsets: p.Offsets,
		Lag: Lag(a, p), RecordsIn: p.Stats.RecordsIn, RecordsOut: p.Stats.RecordsOut, DLQ: p.Stats.DLQ, Late: p.Stats.Late,
		Steps: p.Stats.Steps, LastStepMs: p.Stats.LastStep, Spec: p.Spec}
	d.StateEntries, _ = a.ProcessorStateSize(p.Name)
	switch {
	case p.Paused:
		d.State = "paused"
	case m == nil:
		d.State = "stopped"
	default:
		st := m.Status(p.Name)
		d.State, d.LastError = "stopped", st.LastError
		if st.Running {
			d.State = "running"
		}
		if st.LastError != "" {
			d.State = "error"
		}
	}
	return d
}

// QueryState returns the committed aggregate of key for processor p:
// {"count": N} (or sum, min, max, avg), from its last aggregate stage.
// ok is false when the key has none.
func QueryState(a Admin, p *raftstore.ProcessorInfo, key string) (value map[string]any, ok bool, err error) {
	var spec Spec
	if err := json.Unmarshal(p.Spec, &spec); err != nil {
		return nil, false, fmt.Errorf("decode spec of %s: %w", p.Name, err)
	}
	stage := -1
	for i, st := range spec.Stages {
		if st.Aggregate != nil {
			stage = i
		}
	}
	if stage < 0 {
		return nil, false, fmt.Errorf("%w: processor %s keeps no aggregate", ErrBadSpec, p.Name)
	}
	if stage > 0 && spec.Stages[stage-1].Window != nil {
		return nil, false, fmt.Errorf("%w: processor %s aggregates per window; read its output topic", ErrBadSpec, p.Name)
	}
	raw, ok, err := a.ProcessorState(p.Name, []byte(stagePrefix(stage)+key))
	if err != nil || !ok {
		return nil, false, err
	}
	s, err := decodeAgg(raw)
	if err != nil {
		return nil, false, fmt.Errorf("decode state of %s: %w", key, err)
	}
	op := &aggregateOp{op: spec.Stages[stage].Aggregate.Op}
	return op.result(&s), true, nil
}
