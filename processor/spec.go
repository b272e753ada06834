package processor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/brokerd/brokerd/topic"
)

// Spec is a processor's definition, as deployed (YAML or JSON).
type Spec struct {
	Name   string   `json:"name" yaml:"name"`
	Inputs []string `json:"inputs" yaml:"inputs"`
	Output string   `json:"output" yaml:"output"`
	Stages []Stage  `json:"stages" yaml:"stages"`
	// Start is where a new processor begins reading its inputs:
	// "earliest" (the default) or "latest".
	Start string `json:"start,omitempty" yaml:"start,omitempty"`
	// Step bounds each step: at most MaxRecords input records, and a step
	// is taken at least every Interval when input is waiting.
	Step StepSpec `json:"step,omitempty" yaml:"step,omitempty"`
}

// StepSpec trades latency for throughput: bigger steps are fewer raft
// entries and fsyncs; smaller ones commit output sooner.
type StepSpec struct {
	MaxRecords int      `json:"max_records,omitempty" yaml:"max_records,omitempty"`
	Interval   Duration `json:"interval,omitempty" yaml:"interval,omitempty"`
}

// Stage is one stage of a spec: exactly one of its fields is set.
type Stage struct {
	Filter    string         `json:"filter,omitempty" yaml:"filter,omitempty"`
	Map       *MapSpec       `json:"map,omitempty" yaml:"map,omitempty"`
	KeyBy     string         `json:"key_by,omitempty" yaml:"key_by,omitempty"`
	Window    *WindowSpec    `json:"window,omitempty" yaml:"window,omitempty"`
	Aggregate *AggregateSpec `json:"aggregate,omitempty" yaml:"aggregate,omitempty"`
	Plugin    string         `json:"plugin,omitempty" yaml:"plugin,omitempty"`
	Config    map[string]any `json:"config,omitempty" yaml:"config,omitempty"`
}

// MapSpec rewrites a record's key and value; an empty one keeps it.
type MapSpec struct {
	Key   string `json:"key,omitempty" yaml:"key,omitempty"`
	Value string `json:"value,omitempty" yaml:"value,omitempty"`
}

// WindowSpec groups records into event-time windows for the aggregate
// that follows.
type WindowSpec struct {
	Type     string   `json:"type" yaml:"type"` // tumbling, hopping, session
	Size     Duration `json:"size,omitempty" yaml:"size,omitempty"`
	Slide    Duration `json:"slide,omitempty" yaml:"slide,omitempty"`
	Gap      Duration `json:"gap,omitempty" yaml:"gap,omitempty"`
	Time     string   `json:"time,omitempty" yaml:"time,omitempty"` // event time in ms; default the record timestamp
	Lateness Duration `json:"lateness,omitempty" yaml:"lateness,omitempty"`
	// Idle lets the watermark pass a partition with no newer event time
	// for this long (on the leader's clock); 0: never.
	Idle Duration `json:"idle,omitempty" yaml:"idle,omitempty"`
}

// AggregateSpec keeps one aggregate per key (per window, after a window).
type AggregateSpec struct {
	Op string `json:"op" yaml:"op"` // count, sum, min, max, avg
	Of string `json:"of,omitempty" yaml:"of,omitempty"`
}

// Duration is a time.Duration written as "60s", "100ms" (or nanoseconds).
type Duration time.Duration

func (d *Duration) parse(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// UnmarshalJSON accepts "60s" or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return d.parse(s)
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration %s: want a string such as \"60s\"", b)
	}
	*d = Duration(n)
	return nil
}

// MarshalJSON writes "60s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalYAML accepts "60s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error { return d.parse(n.Value) }

// Defaults of a step.
const (
	DefaultStepRecords  = 10000
	DefaultStepInterval = 100 * time.Millisecond
	maxStepRecords      = 1000000
)

// ParseSpecs reads one or more specs: a JSON object, a JSON array, or YAML
// documents separated by "---".
func ParseSpecs(data []byte) ([]Spec, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("empty spec")
	}
	var specs []Spec
	switch trimmed[0] {
	case '[':
		if err := strictJSON(trimmed, &specs); err != nil {
			return nil, err
		}
	case '{':
		var s Spec
		if err := strictJSON(trimmed, &s); err != nil {
			return nil, err
		}
		specs = []Spec{s}
	default:
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		for {
			var s Spec
			err := dec.Decode(&s)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("spec: %w", err)
			}
			specs = append(specs, s)
		}
	}
	for i := range specs {
		if err := specs[i].Validate(); err != nil {
			return nil, err
		}
	}
	return specs, nil
}

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	return nil
}

// Validate checks a spec: its names, its step settings, and every stage
// (kind, expressions, plugin and config). The error names the stage.
func (s *Spec) Validate() error {
	if s.Name == "" {
		return errors.New("spec: no name")
	}
	if err := topic.ValidateName(s.Name + ".late"); err != nil {
		return fmt.Errorf("processor %s: invalid name: %w", s.Name, err)
	}
	if len(s.Inputs) == 0 {
		return fmt.Errorf("processor %s: no inputs", s.Name)
	}
	for i, in := range s.Inputs {
		for _, before := range s.Inputs[:i] {
			if before == in {
				return fmt.Errorf("processor %s: input %s is listed twice", s.Name, in)
			}
		}
		if err := topic.ValidateName(in); err != nil {
			return fmt.Errorf("processor %s: input %q: %w", s.Name, in, err)
		}
		if in == s.Output {
			return fmt.Errorf("processor %s: the output %s is also an input", s.Name, in)
		}
	}
	if err := topic.ValidateName(s.Output); err != nil {
		return fmt.Errorf("processor %s: output %q: %w", s.Name, s.Output, err)
	}
	for _, t := range []string{s.DLQTopic(), s.LateTopic()} {
		for _, in := range s.Inputs {
			if in == t {
				return fmt.Errorf("processor %s: the input %s is one of its own outputs", s.Name, in)
			}
		}
	}
	switch strings.ToLower(s.Start) {
	case "", "earliest", "latest":
	default:
		return fmt.Errorf("processor %s: start %q (want earliest or latest)", s.Name, s.Start)
	}
	if s.Step.MaxRecords < 0 || s.Step.MaxRecords > maxStepRecords || s.Step.Interval < 0 {
		return fmt.Errorf("processor %s: step max_records %d (0 to %d) and interval %s (not negative)", s.Name, s.Step.MaxRecords, maxStepRecords, time.Duration(s.Step.Interval))
	}
	if len(s.Stages) == 0 {
		return fmt.Errorf("processor %s: no stages", s.Name)
	}
	_, err := compile(s)
	return err
}

// DLQTopic is where records an expression failed on go.
func (s *Spec) DLQTopic() string { return s.Name + ".dlq" }

// LateTopic is where records behind the watermark go.
func (s *Spec) LateTopic() string { return s.Name + ".late" }

func (s *Spec) stepRecords() int {
	if s.Step.MaxRecords > 0 {
		return s.Step.MaxRecords
	}
	return DefaultStepRecords
}

func (s *Spec) stepInterval() time.Duration {
	if s.Step.Interval > 0 {
		return time.Duration(s.Step.Interval)
	}
	return DefaultStepInterval
}
