// Package processor is brokerd's stream processing engine: a processor is
// a named pipeline of stages (filter, map, key_by, window, aggregate and
// Go plugins) from input topics to an output topic, with keyed state. It
// runs on the raft leader, reads committed records from the local logs,
// and ends every step in one raft command (raftstore.ProcStep) that moves
// the input offsets, changes the state and appends the outputs at once,
// so every input record counts exactly once across crashes and leader
// changes. Followers apply the step's results and never run user code.
//
// This package owns the spec format, the stages, windows and watermarks,
// the plugin registry (Register) and the runtime (Manager); raftstore owns
// the step command and the state's storage.
package processor
