package log

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// byteSource is what the record walker reads: an in-memory slice for
// uncompressed batches, or a buffered decompression stream.
type byteSource interface {
	ReadByte() (byte, error)
	Discard(n int) (int, error)
}

// sliceSource is a byteSource over a byte slice.
type sliceSource struct {
	b []byte
	i int
}

func (s *sliceSource) ReadByte() (byte, error) {
	if s.i >= len(s.b) {
		return 0, io.EOF
	}
	c := s.b[s.i]
	s.i++
	return c, nil
}

func (s *sliceSource) Discard(n int) (int, error) {
	if left := len(s.b) - s.i; n > left {
		s.i = len(s.b)
		return left, io.ErrUnexpectedEOF
	}
	s.i += n
	return n, nil
}

// Smallest encoding of a record body: attributes, timestamp delta, offset
// delta, key length, value length, header count, one byte each.
const minRecordBody = 6

// recordVisitor receives each record's offset delta and timestamp delta
// once the record's framing has been checked; returning true ends the walk
// there.
type recordVisitor func(offsetDelta int32, timestampDelta int64) (stop bool)

// walkBatchRecords walks the count records of a batch's records section,
// stored with codec, and calls visit (if not nil) for each. Compressed
// records are decompressed as a stream of at most limit bytes. Unless visit
// ends the walk early, nothing may follow the last record. This is the one
// record decoder: validation and the timestamp searches both go through it.
func walkBatchRecords(codec int8, records []byte, count int32, limit int64, visit recordVisitor) error {
	if codec == CompressionNone {
		return walkSlice(records, count, visit)
	}
	return walkCompressed(codec, records, count, limit, visit)
}

// walkSlice walks count records held in b, which they must fill exactly
// unless visit ends the walk early.
func walkSlice(b []byte, count int32, visit recordVisitor) error {
	src := sliceSource{b: b}
	stopped, err := walkRecords(&src, count, visit)
	if err != nil {
		return err
	}
	if !stopped && src.i != len(b) {
		return fmt.Errorf("%d bytes follow the last record", len(b)-src.i)
	}
	return nil
}

// walkRecords reads count records from src, or fewer if visit ends the walk,
// and checks their framing: every length is bounded by the bytes that remain
// in its record, offset deltas run 0..count-1, and each record's fields fill
// its length exactly. It allocates nothing, whatever the lengths claim.
// stopped reports that visit ended the walk.
func walkRecords(src byteSource, count int32, visit recordVisitor) (stopped bool, err error) {
	r := recordReader{src: src}
	for i := int32(0); i < count; i++ {
		r.left = math.MaxInt64 // the length prefix is outside the record
		length, err := r.varint(5)
		if err != nil {
			return false, fmt.Errorf("record %d length: %w", i, err)
		}
		if length < minRecordBody {
			return false, fmt.Errorf("record %d: length %d below minimum %d", i, length, minRecordBody)
		}
		r.left = length
		tsDelta, err := r.check(i)
		if err != nil {
			return false, fmt.Errorf("record %d: %w", i, err)
		}
		if visit != nil && visit(i, tsDelta) {
			return true, nil
		}
	}
	return false, nil
}

// recordReader reads one record body, never past its declared length.
type recordReader struct {
	src  byteSource
	left int64
}

var errRecordOverrun = errors.New("field runs past the record's length")

func (r *recordReader) ReadByte() (byte, error) {
	if r.left <= 0 {
		return 0, errRecordOverrun
	}
	c, err := r.src.ReadByte()
	if err != nil {
		return 0, truncated(err)
	}
	r.left--
	return c, nil
}

func (r *recordReader) Discard(n int) (int, error) {
	if int64(n) > r.left {
		return 0, errRecordOverrun
	}
	got, err := r.src.Discard(n)
	r.left -= int64(got)
	if err != nil {
		return got, truncated(err)
	}
	return got, nil
}

// skipBytes skips a varint-length-prefixed byte string; nullable allows -1.
func (r *recordReader) skipBytes(nullable bool) error {
	n, err := r.varint(5)
	if err != nil {
		return err
	}
	if n < 0 {
		if nullable && n == -1 {
			return nil
		}
		return fmt.Errorf("invalid length %d", n)
	}
	_, err = r.Discard(int(n))
	return err
}

// check reads the rest of record index's body, checking its framing, and
// returns its timestamp delta.
func (r *recordReader) check(index int32) (timestampDelta int64, err error) {
	if _, err := r.ReadByte(); err != nil { // attributes
		return 0, fmt.Errorf("attributes: %w", err)
	}
	timestampDelta, err = r.varint(10)
	if err != nil {
		return 0, fmt.Errorf("timestamp delta: %w", err)
	}
	delta, err := r.varint(5)
	if err != nil {
		return 0, fmt.Errorf("offset delta: %w", err)
	}
	if delta != int64(index) {
		return 0, fmt.Errorf("offset delta %d, want %d", delta, index)
	}
	if err := r.skipBytes(true); err != nil {
		return 0, fmt.Errorf("key: %w", err)
	}
	if err := r.skipBytes(true); err != nil {
		return 0, fmt.Errorf("value: %w", err)
	}
	headers, err := r.varint(5)
	if err != nil {
		return 0, fmt.Errorf("header count: %w", err)
	}
	// Each header takes at least two bytes (two lengths).
	if headers < 0 || headers > r.left/2 {
		return 0, fmt.Errorf("invalid header count %d", headers)
	}
	for h := int64(0); h < headers; h++ {
		if err := r.skipBytes(false); err != nil {
			return 0, fmt.Errorf("header %d key: %w", h, err)
		}
		if err := r.skipBytes(true); err != nil {
			return 0, fmt.Errorf("header %d value: %w", h, err)
		}
	}
	if r.left != 0 {
		return 0, fmt.Errorf("%d bytes left over after the last field", r.left)
	}
	return timestampDelta, nil
}

// varint reads a zig-zag varint of at most maxBytes bytes (5 for a Kafka
// varint, 10 for a varlong).
func (r *recordReader) varint(maxBytes int) (int64, error) {
	var ux uint64
	for i := 0; i < maxBytes; i++ {
		c, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		if i == 9 && c > 1 {
			return 0, errors.New("varint overflows 64 bits")
		}
		ux |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if maxBytes == 5 && ux > 0xffffffff {
				return 0, errors.New("varint overflows 32 bits")
			}
			x := int64(ux >> 1)
			if ux&1 != 0 {
				x = ^x
			}
			return x, nil
		}
	}
	return 0, fmt.Errorf("varint longer than %d bytes", maxBytes)
}

// truncated turns a plain end of input into an unexpected one: every read
// inside a record expects more bytes.
func truncated(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
