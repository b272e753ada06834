package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/topic"
)

// Store is what the runtime needs of the replicated store; a
// *raftstore.Store is one.
type Store interface {
	Processor(name string) (*raftstore.ProcessorInfo, bool)
	Processors() []*raftstore.ProcessorInfo
	ProcessorState(name string, key []byte) ([]byte, bool, error)
	ProcessorStateScan(name string, prefix []byte, fn func(key, value []byte) bool) error
	ApplyStep(ctx context.Context, st *raftstore.ProcStep) error
	Topic(name string) (topic.Topic, bool)
	Log(name string, partition int32) (*log.Log, bool)
	LastStableOffset(name string, partition int32) int64
	AbortedTxns(name string, partition int32, from, to int64) []raftstore.AbortedTxn
	IsLeader() bool
	Changed() <-chan struct{}
}

// Manager runs the deployed processors while this node leads: one runner
// per processor that is not paused, started and stopped as processors are
// deployed, paused, removed, and as leadership comes and goes.
type Manager struct {
	store   Store
	logger  *slog.Logger
	metrics *Metrics

	mu      sync.Mutex
	runners map[string]*runner
	// broken holds why a processor's runner could not be built.
	broken map[string]string
}

// NewManager returns a manager; Run drives it. metrics may be nil.
func NewManager(store Store, logger *slog.Logger, metrics *Metrics) *Manager {
	return &Manager{store: store, logger: logger.With("component", "processor"), metrics: metrics, runners: map[string]*runner{}, broken: map[string]string{}}
}

// reconcileEvery bounds how late a deploy, pause or leadership change is
// noticed when nothing else wakes the manager.
const reconcileEvery = 250 * time.Millisecond

// Run reconciles the runners with the store until ctx ends, then stops
// them all.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(reconcileEvery)
	defer t.Stop()
	defer m.stopAll()
	for {
		m.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *Manager) reconcile(ctx context.Context) {
	want := map[string]*raftstore.ProcessorInfo{}
	if m.store.IsLeader() {
		for _, p := range m.store.Processors() {
			if !p.Paused {
				want[p.Name] = p
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.broken {
		if _, ok := want[name]; !ok {
			delete(m.broken, name)
		}
	}
	for name, r := range m.runners {
		if p, ok := want[name]; !ok || p.Generation != r.generation {
			r.stop()
			delete(m.runners, name)
		}
	}
	for name, p := range want {
		if _, ok := m.runners[name]; ok {
			continue
		}
		r, err := m.newRunner(p)
		if err != nil {
			if m.broken[name] != err.Error() {
				m.logger.Error("processor cannot run", "processor", name, "err", err)
			}
			m.broken[name] = err.Error()
			continue
		}
		delete(m.broken, name)
		m.runners[name] = r
		r.start(ctx)
	}
}

func (m *Manager) stopAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, r := range m.runners {
		r.stop()
		delete(m.runners, name)
	}
}

// Status is what the runtime knows of a processor beyond the store: its
// last error, if it is running here.
type Status struct {
	Running   bool   `json:"running"`
	LastError string `json:"last_error,omitempty"`
}

// Status reports the runtime side of processor name.
func (m *Manager) Status(name string) Status {
	m.mu.Lock()
	r, broken := m.runners[name], m.broken[name]
	m.mu.Unlock()
	if r == nil {
		return Status{LastError: broken}
	}
	return Status{Running: true, LastError: r.lastError()}
}

// runner runs one processor's steps, one after another.
type runner struct {
	name       string
	generation uint64
	spec       *Spec
	store      Store
	logger     *slog.Logger
	metrics    *Metrics
	stepper    *stepper

	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    string
}

func (m *Manager) newRunner(p *raftstore.ProcessorInfo) (*runner, error) {
	var spec Spec
	if err := json.Unmarshal(p.Spec, &spec); err != nil {
		return nil, fmt.Errorf("decode spec: %w", err)
	}
	pipe, err := compile(&spec)
	if err != nil {
		return nil, err
	}
	r := &runner{name: p.Name, generation: p.Generation, spec: &spec, store: m.store,
		logger: m.logger.With("processor", p.Name), metrics: m.metrics, done: make(chan struct{})}
	r.stepper = &stepper{store: m.store, spec: &spec, pipe: pipe}
	return r, nil
}

func (r *runner) start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	go func() {
		defer close(r.done)
		r.loop(ctx)
	}()
}

func (r *runner) stop() {
	r.cancel()
	<-r.done
}

func (r *runner) lastError() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *runner) setError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.err = ""
		return
	}
	r.err = err.Error()
}

// loop takes steps until ctx ends. Each step starts from what the store
// has committed, so after any failure (an unknown outcome, a fenced step)
// the next one simply starts from the truth.
func (r *runner) loop(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		changed := r.store.Changed()
		info, ok := r.store.Processor(r.name)
		if !ok || info.Generation != r.generation || info.Paused {
			return
		}
		began := time.Now()
		r.stepper.pipe.reset()
		b, err := r.stepper.build(info, began)
		if err == nil && b.step != nil {
			err = r.store.ApplyStep(ctx, b.step)
			if err == nil {
				r.metrics.observeStep(r.name, b.step, time.Since(began))
			}
		}
		switch {
		case err == nil && b.step == nil:
			// Nothing to read: wait for the log to change.
			r.setError(nil)
			select {
			case <-ctx.Done():
			case <-changed:
			case <-time.After(r.spec.stepInterval()):
			}
			continue
		case err == nil:
			r.setError(nil)
			r.stepper.applied(b)
			backoff = 100 * time.Millisecond
			continue
		case errors.Is(err, raftstore.ErrStepTooLarge):
			// Its outputs and state changes outgrew one raft entry: take
			// fewer records, and close fewer windows. The next step reads
			// the same partitions first.
			if lim, ok := b.shrink(); ok {
				r.stepper.limits = lim
				continue
			}
			if b.records == 1 && (r.stepper.oversize == nil || *r.stepper.oversize != b.last) {
				// One record alone is too much for a step: it goes to the
				// dead-letter topic rather than stall the processor.
				r.logger.Warn("a record's step exceeds the step limit; it goes to the dead-letter topic",
					"topic", b.last.topic, "partition", b.last.partition, "offset", b.last.offset)
				last := b.last
				r.stepper.limits, r.stepper.oversize = stepLimits{on: true, records: 1}, &last
				continue
			}
			// Nothing left to make smaller: an error, retried with backoff.
		case errors.Is(err, raftstore.ErrProcessorFenced), errors.Is(err, raftstore.ErrUnknownOutcome):
			// The committed offsets say what happened; start from them.
			r.logger.Debug("step not applied; retrying from the committed offsets", "err", err)
			continue
		case errors.Is(err, raftstore.ErrNotLeader), errors.Is(err, raftstore.ErrClosed), ctx.Err() != nil:
			return
		}
		r.setError(err)
		r.logger.Warn("processor step failed", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
