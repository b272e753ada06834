// Package group is brokerd's classic consumer-group coordinator: the
// in-memory membership state machine of every group (Empty,
// PreparingRebalance, CompletingRebalance, Stable, Dead), generations,
// leader election, JoinGroup (with KIP-394's MEMBER_ID_REQUIRED), SyncGroup,
// Heartbeat, LeaveGroup, static membership (KIP-345), rebalance and session
// timeouts, and the membership checks that OffsetCommit, OffsetDelete and
// DeleteGroups make.
//
// Membership lives in memory on the raft leader. Each group's membership
// record (record.go: generation, protocol, members and assignments) is
// written through Config.Persist when a rebalance completes, before the
// members learn their assignments, and when the group empties or goes, as
// Kafka's coordinator writes group metadata to __consumer_offsets. When
// leadership moves, the old leader drops its groups (Deactivate) and the new
// one loads the records (Activate): members carry on with their generation
// instead of rejoining, and no generation a member committed in is ever
// handed out again. Committed offsets belong to raftstore: this package
// never reads or writes them, and callers pass in what it needs to know
// about them (whether a group has any).
//
// The coordinator relays the clients' protocol: it picks the protocol every
// member supports, hands every member's metadata to the leader and every
// member its part of the leader's assignment, and never interprets
// assignments, so eager and cooperative assignors both work. The one place
// it reads protocol bytes is the "consumer" subscription metadata, to tell
// which topics a live group consumes (OffsetDelete) and whether a static
// member's subscription changed.
//
// Time comes from a Clock and deadlines are checked by Tick, so tests can
// drive time. The state machine never blocks: JoinGroup and SyncGroup
// return a channel that receives the answer once the rebalance gets there.
package group
