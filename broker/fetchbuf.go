package broker

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/brokerd/brokerd/log"
)

// Fetch reads go into buffers reused from earlier fetches: a fresh buffer
// is zeroed before the read overwrites it, which costs as much CPU as the
// read. A buffer returns to its pool once the response that referenced it
// has been written (wire.Request.AfterWrite); one that never returns (the
// connection closed first) is simply collected.

// Size classes: powers of two from 64 KiB to 8 MiB. Larger reads get a
// fresh buffer.
const (
	minReadBufShift = 16
	maxReadBufShift = 23
)

var readBufPools [maxReadBufShift - minReadBufShift + 1]sync.Pool

// readBufClass is the class of buffers that hold n bytes, or -1.
func readBufClass(n int) int {
	if n > 1<<maxReadBufShift {
		return -1
	}
	shift := max(bits.Len(uint(n-1)), minReadBufShift)
	return shift - minReadBufShift
}

// getReadBuf returns a buffer with room for n bytes, or nil for a read too
// large to pool.
func getReadBuf(n int) []byte {
	// A read under the smallest class gets a buffer of its own size: a
	// pooled one would hold up to 64 KiB for a few bytes, for as long as
	// a long poll waits. Larger reads hold at most twice what they read.
	if n < 1<<minReadBufShift {
		return nil
	}
	c := readBufClass(n)
	if c < 0 {
		return nil
	}
	if b, ok := readBufPools[c].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, 1<<(c+minReadBufShift))
}

// putReadBuf returns b's buffer to its pool; b may be any prefix of a
// buffer getReadBuf returned (others are ignored).
func putReadBuf(b []byte) {
	c := cap(b)
	if c < 1<<minReadBufShift || c > 1<<maxReadBufShift || c&(c-1) != 0 {
		return
	}
	b = b[:0]
	readBufPools[bits.Len(uint(c))-1-minReadBufShift].Put(&b)
}

// minSendFileBytes: a smaller read is read into memory, where it costs
// less than a descriptor of its own and a sendfile call (the writer also
// copies records this small into its buffer).
const minSendFileBytes = 16 << 10

// maxFileRanges bounds the file ranges (each a descriptor of its own)
// that Fetch responses hold at once, across connections: past it, reads
// go to memory, so that clients cannot run the process out of
// descriptors. fileRanges counts those held.
const maxFileRanges = 1024

var fileRanges atomic.Int64

// fetchBufs are what one Fetch request read into: pooled buffers, and the
// records it left in segment files (by partition index) to go out with
// sendfile when sendFiles is set. segmentEnd records that a read stopped
// at the end of a segment with more to read past it.
type fetchBufs struct {
	bufs       [][]byte
	sendFiles  bool
	files      []*log.FileRange
	segmentEnd bool
}

// read reads a partition's whole batches from offset with base offsets
// below end, as Log.ReadWith and Log.ReadRange do: into memory (data), or
// left in the segment file when f sends files and the read is large.
func (f *fetchBufs) read(l *log.Log, offset int64, limit int, end int64) ([]byte, *log.FileRange, error) {
	if !f.sendFiles {
		data, err := l.ReadWith(offset, int32(limit), f.alloc)
		if err != nil {
			return nil, nil, err
		}
		return truncateBatchesAt(data, end), nil, nil
	}
	minFile := minSendFileBytes
	if fileRanges.Add(1) > maxFileRanges {
		minFile = math.MaxInt // read it
	}
	data, fr, more, err := l.ReadRange(offset, int32(limit), end, minFile, f.alloc)
	if fr == nil {
		fileRanges.Add(-1)
	}
	f.segmentEnd = f.segmentEnd || more
	return data, fr, err
}

// closeRange closes a file range read, if any.
func closeRange(fr *log.FileRange) {
	if fr != nil {
		fr.Close()
		fileRanges.Add(-1)
	}
}

// setFile records that partition i's records were left in fr.
func (f *fetchBufs) setFile(i int, fr *log.FileRange) {
	if fr == nil {
		return
	}
	for len(f.files) <= i {
		f.files = append(f.files, nil)
	}
	f.files[i] = fr
}

// file returns where partition i's records were left, or nil.
func (f *fetchBufs) file(i int) *log.FileRange {
	if i < len(f.files) {
		return f.files[i]
	}
	return nil
}

// fileLen is how many record bytes partition i left in a file.
func (f *fetchBufs) fileLen(i int) int {
	if fr := f.file(i); fr != nil {
		return fr.Len
	}
	return 0
}

func (f *fetchBufs) alloc(n int) []byte {
	b := getReadBuf(n)
	if b != nil {
		f.bufs = append(f.bufs, b)
	}
	return b
}

// release returns every buffer and closes every file; nothing may
// reference them afterwards.
func (f *fetchBufs) release() {
	for _, b := range f.bufs {
		putReadBuf(b)
	}
	f.bufs = nil
	for _, fr := range f.files {
		closeRange(fr)
	}
	f.files = nil
	f.segmentEnd = false
}
