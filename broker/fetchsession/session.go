package fetchsession

import (
	"container/list"
	"math"
	"sync"
	"time"
)

// Key names one partition of a session. A session of Fetch v13+ names
// topics by ID (Topic is empty); older versions name them by name (ID is
// zero).
type Key struct {
	Topic     string
	ID        [16]byte
	Partition int32
}

// Params are what a client sends for one partition; a session remembers
// them so that an incremental fetch need not repeat them.
type Params struct {
	FetchOffset        int64
	LogStartOffset     int64
	MaxBytes           int32
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
}

// Partition is one partition to read, with its parameters.
type Partition struct {
	Key
	Params
}

// Result is what the broker read for one partition, as far as the session
// needs it to decide whether the client must hear about the partition.
type Result struct {
	HighWatermark  int64
	LogStartOffset int64
	ErrorCode      int16
	// RecordBytes is the size of the records returned.
	RecordBytes int
	// PreferredReadReplica is set when the broker names another replica
	// to read from (KIP-392).
	PreferredReadReplica bool
}

// cachedPartition is a session's memory of one partition: the request
// parameters last sent and the high watermark and log start offset last
// answered.
type cachedPartition struct {
	Partition
	highWatermark  int64
	logStartOffset int64
}

// mustRespond reports whether an incremental response must carry this
// partition, and with update records what the client is now told. As in
// Kafka: records, a changed high watermark or log start offset, an error
// (which also forgets the high watermark, so the partition is sent again
// when the error clears), or a preferred read replica.
func (c *cachedPartition) mustRespond(r Result, update bool) bool {
	must := r.RecordBytes > 0 || r.PreferredReadReplica
	if c.highWatermark != r.HighWatermark {
		must = true
		if update {
			c.highWatermark = r.HighWatermark
		}
	}
	if c.logStartOffset != r.LogStartOffset {
		must = true
		if update {
			c.logStartOffset = r.LogStartOffset
		}
	}
	if r.ErrorCode != 0 {
		must = true
		if update {
			c.highWatermark = -1
		}
	}
	return must
}

// session is one client's incremental fetch session. Its own lock guards
// its partitions and epoch, so one client's large session never holds up
// another's fetch; the cache's lock guards the fields marked so.
type session struct {
	id      int32
	usesIDs bool
	created time.Time

	// Guarded by the cache's lock: when the session was last used, and
	// the cost it is counted for in the cache's bounds.
	used          time.Time
	countedParts  int
	countedBytes  int64
	countedActive bool // still in the cache

	mu    sync.Mutex
	epoch int32
	// order keeps the partitions in the order they are read: partitions
	// that returned records move to the back, so that fetch.max.bytes
	// does not starve the ones at the back.
	order *list.List // of *cachedPartition
	parts map[Key]*list.Element
	bytes int64 // partitionCost summed over parts
}

func newSession(usesIDs bool, now time.Time) *session {
	return &session{epoch: nextEpoch(0), usesIDs: usesIDs, created: now, used: now, order: list.New(), parts: map[Key]*list.Element{}}
}

func (s *session) size() int { return len(s.parts) }

// partitionCost estimates the memory one cached partition takes: the list
// element, the map entry, the cached fields and the topic name.
func partitionCost(k Key) int64 { return 200 + int64(len(k.Topic)) }

// add inserts or updates a partition's request parameters.
func (s *session) add(p Partition) {
	if e, ok := s.parts[p.Key]; ok {
		e.Value.(*cachedPartition).Params = p.Params
		return
	}
	s.parts[p.Key] = s.order.PushBack(&cachedPartition{Partition: p, highWatermark: -1, logStartOffset: -1})
	s.bytes += partitionCost(p.Key)
}

func (s *session) forget(k Key) {
	if e, ok := s.parts[k]; ok {
		s.order.Remove(e)
		delete(s.parts, k)
		s.bytes -= partitionCost(k)
	}
}

// partitions lists the session's partitions in read order.
func (s *session) partitions() []Partition {
	out := make([]Partition, 0, s.order.Len())
	for e := s.order.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*cachedPartition).Partition)
	}
	return out
}

// nextEpoch is Kafka's FetchMetadata.nextEpoch: epochs count up from 1 and
// wrap to 1; the final epoch (-1) stays final.
func nextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return finalEpoch
	case e == math.MaxInt32:
		return 1
	}
	return e + 1
}
