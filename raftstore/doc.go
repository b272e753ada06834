// Package raftstore owns brokerd's one write path: the replicated command log
// (hashicorp/raft), the deterministic FSM that applies commands to the
// partition logs (package log) and to the state DB (bbolt), the FSM's
// checkpoints and raft snapshots, and the typed API that the broker uses to
// propose commands and to read committed state.
//
// Every state change is a raft command. A single node is a one-member raft
// group. The FSM never reads the clock: timestamps come from the command.
// The FSM does not fsync on every apply; it checkpoints (fsync the dirty
// segments, then commit its applied index together with the state that index
// covers in one bbolt transaction) and on restart skips the raft entries it
// already holds.
package raftstore
