package raftstore

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/brokerd/brokerd/topic"
)

// Processors (the processor package runs them) are replicated here as
// plain data: each one's spec, its generation, its committed input offsets
// and its keyed state. The FSM knows nothing of stages: it applies a
// processor's step (proc_apply.go), which carries the new offsets, the
// state changes and the output batches, all or nothing.

// ProcessorInfo is a deployed processor as the FSM holds it.
type ProcessorInfo struct {
	Name string `json:"name"`
	// Spec is the processor's spec as deployed; opaque to the FSM.
	Spec []byte `json:"spec"`
	// Inputs are the topics it reads; Outputs the topics it may write
	// (its output, dead-letter and late topics).
	Inputs  []string `json:"inputs"`
	Outputs []string `json:"outputs"`
	// Generation is the raft index of the deploy: a step carries it, so
	// no step of an earlier deployment of the same name can apply.
	Generation uint64 `json:"generation"`
	Paused     bool   `json:"paused,omitempty"`
	// Offsets maps "<topic>/<partition>" of each input partition to the
	// next offset to read; one that is absent is 0.
	Offsets map[string]int64 `json:"offsets"`
	Stats   ProcessorStats   `json:"stats"`
}

// ProcessorStats are a processor's counters, advanced by its steps.
type ProcessorStats struct {
	RecordsIn  int64 `json:"records_in"`
	RecordsOut int64 `json:"records_out"`
	DLQ        int64 `json:"dlq"`
	Late       int64 `json:"late"`
	Steps      int64 `json:"steps"`
	// LastStep is the leader's clock (unix ms) at the last step.
	LastStep int64 `json:"last_step_ms"`
}

func (p *ProcessorInfo) clone() *ProcessorInfo {
	c := *p
	c.Spec = slices.Clone(p.Spec)
	c.Inputs = slices.Clone(p.Inputs)
	c.Outputs = slices.Clone(p.Outputs)
	c.Offsets = maps.Clone(p.Offsets)
	return &c
}

// MaxStateKeyBytes and MaxStateValueBytes bound one state entry of a
// processor.
const (
	MaxStateKeyBytes   = 16 << 10
	MaxStateValueBytes = 4 << 20
)

// Limits on a processor's state entries.
const (
	maxStateKeyBytes   = MaxStateKeyBytes
	maxStateValueBytes = MaxStateValueBytes
	// maxProcessorSpecBytes bounds a spec.
	maxProcessorSpecBytes = 1 << 20
)

// procTable holds the processors. Apply writes (on the FSM goroutine);
// readers take mu. State changes since the last checkpoint stay in delta
// (a nil value is a delete) and go to bbolt at the checkpoint; a read
// looks in delta first, then in bbolt, so state may exceed memory.
type procTable struct {
	mu    sync.RWMutex
	infos map[string]*ProcessorInfo
	delta map[string]map[string][]byte
	// dirty names processors whose info changed; dropped those whose
	// state bucket goes at the next checkpoint (deleted or redeployed),
	// each with the drop's number (drops counts them), so that a commit
	// forgets only the drops it carried out.
	dirty   map[string]bool
	dropped map[string]uint64
	drops   uint64
}

// drop marks processor name's state bucket for dropping. t.mu held.
func (t *procTable) drop(name string) {
	t.drops++
	t.dropped[name] = t.drops
	delete(t.delta, name)
}

func newProcTable() procTable {
	return procTable{infos: map[string]*ProcessorInfo{}, delta: map[string]map[string][]byte{}, dirty: map[string]bool{}, dropped: map[string]uint64{}}
}

// forgetTopic drops every processor's committed offsets of a deleted
// topic, so that a topic created again under the name is read from its
// start, not from the old topic's offsets.
func (t *procTable) forgetTopic(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for pname, p := range t.infos {
		for k := range p.Offsets {
			if strings.HasPrefix(k, name+"/") && !strings.Contains(k[len(name)+1:], "/") {
				delete(p.Offsets, k)
				t.dirty[pname] = true
			}
		}
	}
}

// Buckets of the state DB for processors: their infos, and one nested
// bucket of state per processor.
var (
	bucketProcessors = []byte("processors")
	bucketProcState  = []byte("processor_state")
)

// Processors lists the deployed processors, sorted by name.
func (s *Store) Processors() []*ProcessorInfo {
	t := &s.fsm.procs
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*ProcessorInfo, 0, len(t.infos))
	for _, p := range t.infos {
		out = append(out, p.clone())
	}
	slices.SortFunc(out, func(a, b *ProcessorInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Processor returns one deployed processor.
func (s *Store) Processor(name string) (*ProcessorInfo, bool) {
	t := &s.fsm.procs
	t.mu.RLock()
	defer t.mu.RUnlock()
	p, ok := t.infos[name]
	if !ok {
		return nil, false
	}
	return p.clone(), true
}

// ProcessorState returns the committed state of processor name for key.
// The processors' lock covers only the in-memory layer; bbolt is read
// without it, so a read never holds up apply.
func (s *Store) ProcessorState(name string, key []byte) ([]byte, bool, error) {
	f := s.fsm
	t := &f.procs
	t.mu.RLock()
	if _, ok := t.infos[name]; !ok {
		t.mu.RUnlock()
		return nil, false, fmt.Errorf("%w: %s", ErrUnknownProcessor, name)
	}
	v, inDelta := t.delta[name][string(key)]
	v = slices.Clone(v)
	dropped := t.dropped[name] != 0
	t.mu.RUnlock()
	if inDelta {
		return v, v != nil, nil
	}
	if dropped {
		return nil, false, nil
	}
	var out []byte
	err := f.db.View(func(tx *bolt.Tx) error {
		if b := procBucket(tx, name); b != nil {
			out = slices.Clone(b.Get(key))
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("read state of processor %s: %w", name, err)
	}
	return out, out != nil, nil
}

// ProcessorStateSize is the number of state entries of processor name:
// those of the last checkpoint, with the changes since counted in.
func (s *Store) ProcessorStateSize(name string) (entries int, err error) {
	f := s.fsm
	t := &f.procs
	t.mu.RLock()
	delta := make(map[string]bool, len(t.delta[name])) // key -> put (false: deleted)
	for k, v := range t.delta[name] {
		delta[k] = v != nil
	}
	dropped := t.dropped[name] != 0
	t.mu.RUnlock()
	err = f.db.View(func(tx *bolt.Tx) error {
		b := procBucket(tx, name)
		if b != nil && !dropped {
			entries = b.Stats().KeyN
		}
		for k, put := range delta {
			inBolt := b != nil && !dropped && b.Get([]byte(k)) != nil
			switch {
			case put && !inBolt:
				entries++
			case !put && inBolt:
				entries--
			}
		}
		return nil
	})
	return entries, err
}

func procBucket(tx *bolt.Tx, name string) *bolt.Bucket {
	root := tx.Bucket(bucketProcState)
	if root == nil {
		return nil
	}
	return root.Bucket([]byte(name))
}

// DeployRequest deploys a processor.
type DeployRequest struct {
	Name    string   `json:"name"`
	Spec    []byte   `json:"spec"`
	Inputs  []string `json:"inputs"`
	Outputs []string `json:"outputs"`
	// FromLatest starts at the inputs' ends; otherwise at their starts.
	FromLatest bool `json:"from_latest,omitempty"`
}

// DeployProcessor deploys a processor; its input and output topics must
// exist. It returns the processor's generation.
func (s *Store) DeployProcessor(ctx context.Context, r DeployRequest) (uint64, error) {
	if err := checkProcessorName(r.Name); err != nil {
		return 0, err
	}
	return proposeFor[uint64](ctx, s, cmdProcDeploy, procDeployCmd{Req: r})
}

// SetProcessorPaused pauses or resumes a processor.
func (s *Store) SetProcessorPaused(ctx context.Context, name string, paused bool) error {
	return s.proposeJSON(ctx, cmdProcPause, procPauseCmd{Name: name, Paused: paused})
}

// DeleteProcessor removes a processor and its state.
func (s *Store) DeleteProcessor(ctx context.Context, name string) error {
	return s.proposeJSON(ctx, cmdProcDelete, procDeleteCmd{Name: name})
}

// checkProcessorName accepts names that are valid topic names, so that
// "<name>.dlq" and "<name>.late" are too.
func checkProcessorName(name string) error {
	if err := topic.ValidateName(name + ".late"); err != nil {
		return fmt.Errorf("%w: processor name %q: %v", ErrInvalidProcessor, name, err)
	}
	return nil
}

// ProcessorStateScan calls fn, in key order, for every committed state
// entry of processor name whose key starts with prefix, until fn returns
// false. The in-memory layer is copied under the processors' lock; bbolt
// is read without it, so a long scan (or a callback that reads state)
// never holds up apply.
func (s *Store) ProcessorStateScan(name string, prefix []byte, fn func(key, value []byte) bool) error {
	f := s.fsm
	t := &f.procs
	t.mu.RLock()
	if _, ok := t.infos[name]; !ok {
		t.mu.RUnlock()
		return fmt.Errorf("%w: %s", ErrUnknownProcessor, name)
	}
	delta := map[string][]byte{}
	var pending []string
	for k, v := range t.delta[name] {
		if strings.HasPrefix(k, string(prefix)) {
			pending = append(pending, k)
			delta[k] = slices.Clone(v)
		}
	}
	dropped := t.dropped[name] != 0
	t.mu.RUnlock()
	slices.Sort(pending)
	// bbolt is read a page at a time, and fn runs between the reads: a
	// callback that reads state (a nested read transaction) could
	// otherwise deadlock with a checkpoint's commit waiting to remap the
	// file, and a slow one would hold that commit up.
	emit := func(d string) bool {
		dv := delta[d]
		return dv == nil || fn([]byte(d), dv)
	}
	from, inclusive := prefix, true
	for {
		var page []StateEntry
		if !dropped {
			err := f.db.View(func(tx *bolt.Tx) error {
				b := procBucket(tx, name)
				if b == nil {
					return nil
				}
				c := b.Cursor()
				k, v := c.Seek(from)
				if k != nil && !inclusive && bytes.Equal(k, from) {
					k, v = c.Next()
				}
				for ; k != nil && bytes.HasPrefix(k, prefix) && len(page) < scanPage; k, v = c.Next() {
					page = append(page, StateEntry{Key: slices.Clone(k), Value: slices.Clone(v)})
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("scan state of processor %s: %w", name, err)
			}
		}
		for _, e := range page {
			// The smaller key goes first; a delta entry hides the
			// committed one of the same key.
			for len(pending) > 0 && pending[0] < string(e.Key) {
				d := pending[0]
				pending = pending[1:]
				if !emit(d) {
					return nil
				}
			}
			if len(pending) > 0 && pending[0] == string(e.Key) {
				d := pending[0]
				pending = pending[1:]
				if !emit(d) {
					return nil
				}
				continue
			}
			if !fn(e.Key, e.Value) {
				return nil
			}
		}
		if len(page) < scanPage {
			for _, d := range pending {
				if !emit(d) {
					return nil
				}
			}
			return nil
		}
		from, inclusive = page[len(page)-1].Key, false
	}
}

// scanPage is how many committed entries ProcessorStateScan reads per
// bbolt transaction.
const scanPage = 256
