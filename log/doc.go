// Package log owns a partition's data on disk: the Kafka v2 record batches a
// partition holds, split into segment files named by base offset
// (00000000000000000000.log), each with a sparse offset index (.index) and a
// time index (.timeindex), plus a small checkpoint file (log.checkpoint) that
// records the log start offset, the recovery point and each segment's created
// time (for segment.ms).
//
// It also owns the record batch format itself: parsing batch headers,
// validating a produced batch (CRC, record framing, decompression with a hard
// cap) and rewriting the fields that sit outside the CRC (base offset, leader
// epoch). One record walker serves validation and the ListOffsets searches
// (OffsetForTimestamp, MaxTimestampOffset), which answer with the exact
// record, as Kafka does, decoding only the batches that can hold it.
//
// The package knows nothing of raft or the Kafka wire. Its callers are the
// raft FSM, which is the only writer (Append, Truncate, ApplyRetention,
// AdvanceStartOffset), and fetch handlers, which read concurrently.
//
// Determinism: the log never reads the clock. Every decision that depends on
// time (segment.ms rolling, retention.ms) uses the timestamp the caller passes
// in, so replicas that apply the same commands end with the same segments.
//
// Open files: the package owns the descriptors of its segments and bounds
// them. A log's active segment stays open; sealed segments are opened when
// read and closed again through an OpenCache, a least-recently-used set of
// idle segments shared by every log of the process (DefaultOpenCache, a
// quarter of RLIMIT_NOFILE), so the files held stay bounded however many
// segments the logs have. A segment in use is never closed: reads hold the
// ones they read, and the writer holds every segment written since the last
// fsync, so a segment is always fsynced before it can be closed (when more
// than a few dozen sealed segments await a flush, the roll that seals
// another fsyncs them). Open checks sealed segments one at a time and keeps
// none of them open for itself.
//
// Durability: Append does not fsync the data it appends (only, rarely,
// segments it sealed earlier, as above); raft's log is what makes a write
// durable.
// Flush fsyncs every dirty file and records the recovery point, the end offset
// as of that flush. Open trusts segments below the recovery point and scans
// (and if needed truncates) only what lies at or after it.
//
// Verification: what Open trusts is unverified until its CRCs are checked
// (verify.go). No read serves unverified bytes: Read, ReadWith and ReadRange
// CRC-check such a segment whole first, once per process (concurrent first
// readers wait for one pass), and VerifyAll checks every segment in the
// background, paced by its caller. A batch that fails is damage: the reads
// that reach it return ErrDamaged, never its bytes, and the log's damage
// handler (SetDamageHandler) hears of it once; the log itself knows nothing
// of what the caller does about it. VerifyStats counts the work.
package log
