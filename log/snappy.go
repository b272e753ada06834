package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/snappy"
)

// Kafka's snappy batches come in two shapes: a raw snappy block (franz-go,
// sarama, librdkafka) or the xerial framing written by the Java client: an
// 8-byte magic, two 4-byte version words, then chunks, each a big-endian
// uint32 length followed by a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

func isXerial(data []byte) bool {
	return len(data) >= len(xerialMagic) && bytes.Equal(data[:len(xerialMagic)], xerialMagic)
}

// decodeSnappyBlock decodes one raw snappy block into dst's storage after
// checking that its declared length is within left. Blocks are decoded
// strictly (no s2 extensions such as repeat offsets), since consumers use
// plain snappy decoders; a faster s2 decode plus a tag scan for those
// extensions measured only ~30% faster, not worth a second parser.
func decodeSnappyBlock(dst, block []byte, left int64) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	if int64(n) > left {
		return nil, errDecompressCap
	}
	out, err := snappy.DecodeStrict(dst[:cap(dst)], block)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	return out, nil
}

// walkRawSnappy decodes a single raw snappy block and walks its records.
func walkRawSnappy(data []byte, count int32, limit int64, visit recordVisitor) error {
	n, err := snappy.DecodedLen(data)
	if err != nil {
		return fmt.Errorf("snappy: %w", err)
	}
	if int64(n) > limit {
		return errDecompressCap
	}
	p := getBuf(n)
	defer putBuf(p)
	out, err := decodeSnappyBlock(*p, data, limit)
	if err != nil {
		return err
	}
	*p = out[:0]
	return walkSlice(out, count, visit)
}

// xerialReader streams the decoded contents of xerial-framed snappy, one
// chunk at a time, so memory stays at one chunk whatever the total.
type xerialReader struct {
	src   []byte
	pos   int
	left  int64 // decoded bytes still allowed
	chunk []byte
	out   []byte // undelivered part of chunk
	err   error
}

func (x *xerialReader) reset(data []byte, limit int64) {
	x.src, x.pos, x.left, x.out, x.err = data, 0, limit, nil, nil
	if len(data) < xerialHeaderSize {
		x.err = errors.New("snappy: short xerial header")
		return
	}
	x.pos = xerialHeaderSize
}

func (x *xerialReader) Read(p []byte) (int, error) {
	for len(x.out) == 0 {
		if x.err != nil {
			return 0, x.err
		}
		x.err = x.next()
	}
	n := copy(p, x.out)
	x.out = x.out[n:]
	return n, nil
}

// next decodes the following chunk into x.out.
func (x *xerialReader) next() error {
	rest := x.src[x.pos:]
	if len(rest) == 0 {
		return io.EOF
	}
	if len(rest) < 4 {
		return errors.New("snappy: truncated xerial chunk length")
	}
	size := binary.BigEndian.Uint32(rest)
	rest = rest[4:]
	if uint64(size) > uint64(len(rest)) {
		return fmt.Errorf("snappy: xerial chunk of %d bytes, %d remain", size, len(rest))
	}
	out, err := decodeSnappyBlock(x.chunk, rest[:size], x.left)
	if err != nil {
		return err
	}
	x.chunk = out[:0]
	if cap(x.chunk) > maxPooledBuf {
		x.chunk = nil
	}
	x.left -= int64(len(out))
	x.out = out
	x.pos += 4 + int(size)
	return nil
}
