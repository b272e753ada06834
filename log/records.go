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

// walkRecords reads exactly count records from src and checks their framing:
// every length is bounded by the bytes that remain in its record, offset
// deltas run 0..count-1, and each record's fields fill its length exactly.
// It allocates nothing, whatever the lengths claim.
func walkRecords(src byteSource, count int32) error {
	r := recordReader{src: src}
	for i := int32(0); i < count; i++ {
		r.left = math.MaxInt64 // the length prefix is outside the record
		length, err := r.varint(5)
		if err != nil {
			return fmt.Errorf("record %d length: %w", i, err)
		}
		if length < minRecordBody {
			return fmt.Errorf("record %d: length %d below minimum %d", i, length, minRecordBody)
		}
		r.left = length
		if err := r.check(i); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
	}
	return nil
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

func (r *recordReader) check(index int32) error {
	if _, err := r.ReadByte(); err != nil { // attributes
		return fmt.Errorf("attributes: %w", err)
	}
	if _, err := r.varint(10); err != nil {
		return fmt.Errorf("timestamp delta: %w", err)
	}
	delta, err := r.varint(5)
	if err != nil {
		return fmt.Errorf("offset delta: %w", err)
	}
	if delta != int64(index) {
		return fmt.Errorf("offset delta %d, want %d", delta, index)
	}
	if err := r.skipBytes(true); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	if err := r.skipBytes(true); err != nil {
		return fmt.Errorf("value: %w", err)
	}
	headers, err := r.varint(5)
	if err != nil {
		return fmt.Errorf("header count: %w", err)
	}
	// Each header takes at least two bytes (two lengths).
	if headers < 0 || headers > r.left/2 {
		return fmt.Errorf("invalid header count %d", headers)
	}
	for h := int64(0); h < headers; h++ {
		if err := r.skipBytes(false); err != nil {
			return fmt.Errorf("header %d key: %w", h, err)
		}
		if err := r.skipBytes(true); err != nil {
			return fmt.Errorf("header %d value: %w", h, err)
		}
	}
	if r.left != 0 {
		return fmt.Errorf("%d bytes left over after the last field", r.left)
	}
	return nil
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
