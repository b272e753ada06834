package raftstore

import "errors"

// Errors returned by commands. They are deterministic outcomes of applying a
// command (every replica returns the same one), except ErrNotLeader and
// ErrUnknownOutcome, which come from the proposer's side.
var (
	// ErrNotLeader means this node cannot propose: it is not the raft leader.
	ErrNotLeader = errors.New("raftstore: not the leader")
	// ErrForeignRegistration: a broker registration by another principal
	// than the one the node id is bound to.
	ErrForeignRegistration = errors.New("raftstore: node id registered by another principal")
	// ErrUnknownOutcome means the command was handed to raft but the proposer
	// lost track of it (leadership lost, timeout). It may still commit later,
	// so callers must answer with a retriable error, never success or a
	// permanent failure.
	ErrUnknownOutcome = errors.New("raftstore: outcome unknown (leadership lost or timed out)")
	// ErrClosed means the store is shutting down.
	ErrClosed = errors.New("raftstore: closed")

	ErrTopicExists              = errors.New("topic already exists")
	ErrUnknownTopic             = errors.New("unknown topic or partition")
	ErrInvalidPartitions        = errors.New("invalid partition count")
	ErrInvalidOffset            = errors.New("offset out of range")
	ErrOutOfOrderSequence       = errors.New("out of order sequence number")
	ErrInvalidProducerEpoch     = errors.New("invalid producer epoch")
	ErrUnknownProducerID        = errors.New("unknown producer id")
	ErrInvalidCommand           = errors.New("invalid command")
	ErrStorage                  = errors.New("storage error")
	ErrInvalidReplicationFactor = errors.New("invalid replication factor")
	ErrProducerFenced           = errors.New("producer fenced by a newer epoch")
	ErrInvalidPIDMapping        = errors.New("invalid producer id mapping")
	ErrInvalidTxnState          = errors.New("invalid transaction state")
	ErrOperationNotAttempted    = errors.New("operation not attempted")
	ErrUnknownMember            = errors.New("unknown cluster member")
	ErrInvalidGroupID           = errors.New("invalid group id (longer than MaxIDBytes)")
	ErrUnknownProcessor         = errors.New("unknown processor")
	ErrProcessorExists          = errors.New("processor already exists")
	ErrInvalidProcessor         = errors.New("invalid processor")
	// ErrProcessorFenced refuses a step that does not start where the
	// processor's committed offsets are, or is of another generation.
	ErrProcessorFenced = errors.New("processor step fenced")
	// ErrStepTooLarge refuses a step over MaxStepBytes; the processor
	// takes a smaller one.
	ErrStepTooLarge = errors.New("processor step too large")
)
