package processor

import (
	"fmt"
	"sort"
	"sync"
)

// Record is what flows between stages: an input record, or one a stage
// emitted. Key and Value are nil when null.
type Record struct {
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp int64 // ms
	Topic     string
	Partition int32
	Offset    int64
	// Window is set by a window stage for the aggregate after it.
	Window *Window

	// parsed caches Value parsed as JSON for expressions, valid while
	// Value is still the slice parsedFrom (stages pass records on).
	parsed     any
	parsedFrom []byte
}

// Window is an event-time window, [Start, End) in ms.
type Window struct {
	Start, End int64
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// State is a stage's keyed state within a step: a read sees the committed
// state and the step's own changes. Keys are the stage's own; they cannot
// collide with another stage's.
type State interface {
	Get(key []byte) (value []byte, ok bool, err error)
	Put(key, value []byte)
	Delete(key []byte)
	// Scan calls fn in key order for every entry whose key starts with
	// prefix, until fn returns false.
	Scan(prefix []byte, fn func(key, value []byte) bool) error
}

// Operator runs one stage. Process handles one record and emits zero or
// more with emit. An error sends the record that entered the pipeline to
// the processor's dead-letter topic, with the error in a header; nothing
// else stops.
type Operator interface {
	Process(st State, r Record, emit func(Record)) error
}

// Flusher is an Operator that also emits at the end of each step, after
// every record of the step went through it (aggregates emit there).
type Flusher interface {
	Flush(st State, emit func(Record)) error
}

// Factory builds a plugin's operator from the stage's config.
type Factory func(config map[string]any) (Operator, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register makes a plugin available to specs as "plugin: name". Call it
// from an init function of a package compiled into brokerd (see
// examples/custom-brokerd). Registering a name twice panics, as it is a
// programming error.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if name == "" || f == nil {
		panic("processor.Register: empty name or nil factory")
	}
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("processor.Register: plugin %q registered twice", name))
	}
	registry[name] = f
}

func lookupPlugin(name string) (Factory, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	f, ok := registry[name]
	return f, ok
}

// Plugins lists the registered plugins' names, sorted.
func Plugins() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for name := range registry {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
