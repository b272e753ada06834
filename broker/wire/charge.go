package wire

import (
	"fmt"
	"math"
)

// The in-flight budget (MaxInFlightBytes) is split in two pools:
//
//   - the frame pool: a frame's bytes, charged before its buffer is
//     allocated and held until its response is written. A sixteenth of
//     the budget is its reserve for small frames (at most a read buffer,
//     which are admitted only once they have arrived whole); one client
//     address may hold at most half of the rest.
//   - the decode pool (an eighth): the room decoding a frame may take,
//     charged once the frame is in memory and, after decoding, shrunk to
//     what the request holds (footprint) until its handler returns.
//
// A frame waits for its frame ticket holding nothing. It waits for its
// decode ticket holding its frame ticket, but the decode pool is held
// only by decodes in progress and by handlers, neither of which waits for
// the budget, so no frames can wait on each other in a cycle.
const (
	reserveShare = 16
	decodeShare  = 8
)

// poolSizes returns the sizes of the frame pool (reserve included), its
// reserve, what one source may hold of it, and the decode pool for a
// budget of capacity bytes.
func poolSizes(capacity int64) (frames, reserve, share, decode int64) {
	capacity = max(capacity, 2)
	decode = max(capacity/decodeShare, 1)
	frames = capacity - decode
	reserve = capacity / reserveShare
	share = (frames - reserve) / 2
	return frames, reserve, share, decode
}

// newPools returns the frame and decode pools cfg (with defaults applied)
// asks for.
func newPools(cfg Config) (frames, decode *budget) {
	total := &gauge{}
	f, reserve, share, d := poolSizes(cfg.MaxInFlightBytes)
	frames = newBudget(f).withReserve(reserve, readBufferSize)
	frames.name = "frame"
	frames.share = share
	frames.maxConns = cfg.MaxConnsPerIP
	frames.total = total
	decode = newBudget(d)
	decode.name = "decode"
	decode.total = total
	return frames, decode
}

// defaultMaxOtherBytes is the non-Produce frame cap for a budget of
// capacity bytes: the largest frame whose worst-case decode fits the
// decode pool, at most DefaultMaxOtherBytes.
func defaultMaxOtherBytes(capacity int64) int32 {
	_, _, _, d := poolSizes(capacity)
	return int32(max(min(d/decodeAmplification, DefaultMaxOtherBytes), minFrameSize))
}

// check reports a configuration (defaults applied) under which some legal
// frame could never be admitted.
func (c Config) check() error {
	_, _, share, d := poolSizes(c.MaxInFlightBytes)
	if int64(c.MaxRequestBytes) > share {
		// share is about 13/32 of the budget.
		return fmt.Errorf("wire: socket.request.max.bytes (%d) is above what one client address may hold of queued.max.request.bytes (%d): %d bytes, half its frame pool; raise queued.max.request.bytes to at least %d or lower socket.request.max.bytes",
			c.MaxRequestBytes, c.MaxInFlightBytes, share, MinInFlightBytesFor(c.MaxRequestBytes))
	}
	if room := int64(c.MaxOtherBytes) * decodeAmplification; room > d {
		return fmt.Errorf("wire: non-Produce frames of up to %d bytes may need %d bytes to decode, above the decode pool (%d bytes, an eighth of queued.max.request.bytes %d)",
			c.MaxOtherBytes, room, d, c.MaxInFlightBytes)
	}
	return nil
}

// maxProduceDecodeRoom caps the decode room of a large Produce frame: its
// topic and partition structs (about 100 bytes a partition) must fit in
// it, which holds tens of thousands of partitions.
const maxProduceDecodeRoom = 8 << 20

// produceRoom is the most that decoding a Produce frame of size bytes may
// allocate (checkProduceCost enforces it).
func produceRoom(size int) int64 {
	return min(int64(size)*produceCostFactor, maxProduceDecodeRoom) + produceCostSlack
}

// otherDecodeRoom is what a non-Produce frame of size bytes is charged in
// the decode pool while it decodes: the worst case kmsg may allocate.
func otherDecodeRoom(size int) int64 { return int64(size) * decodeAmplification }

// MinInFlightBytesFor is the smallest budget (queued.max.request.bytes)
// that admits frames of maxRequest bytes (socket.request.max.bytes).
func MinInFlightBytesFor(maxRequest int32) int64 { return int64(maxRequest)*32/13 + 64 }

// MaxRequestBytesFor is the largest frame (socket.request.max.bytes) a
// budget of capacity bytes (queued.max.request.bytes) admits: what one
// client address may hold of it.
func MaxRequestBytesFor(capacity int64) int32 {
	_, _, share, _ := poolSizes(capacity)
	return int32(min(share, math.MaxInt32))
}
