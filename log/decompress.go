package log

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

const (
	// maxDecompressCap bounds the decompressed size of one batch whatever
	// the caller's maxBytes.
	maxDecompressCap = 256 << 20
	// decompressFactor times maxBytes is the decompressed size allowed for a
	// batch of at most maxBytes compressed bytes.
	decompressFactor = 4
	// minZstdWindow is the smallest zstd window limit used; clients at
	// compression levels up to 19 declare windows of at most 8 MiB.
	minZstdWindow = 8 << 20
	// streamBufSize is the read buffer between a decompressor and the
	// record walker.
	streamBufSize = 32 << 10
	// maxPooledBuf is the largest scratch buffer kept for reuse.
	maxPooledBuf = 8 << 20
)

// decompressCap is the largest decompressed size accepted for a batch that
// may be maxBytes long (maxBytes <= 0 means no produce limit).
func decompressCap(maxBytes int) int64 {
	if maxBytes <= 0 || int64(maxBytes) > maxDecompressCap/decompressFactor {
		return maxDecompressCap
	}
	return int64(maxBytes) * decompressFactor
}

// errDecompressCap is wrapped by every error reporting that a batch's
// records decompress to more than the cap.
var errDecompressCap = fmt.Errorf("%w: decompressed records exceed the cap", ErrBatchTooLarge)

// capReader passes through at most left bytes and fails, rather than
// reporting EOF, if the underlying stream holds more.
type capReader struct {
	r    io.Reader
	left int64
	one  [1]byte
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		n, err := c.r.Read(c.one[:])
		if n > 0 {
			return 0, errDecompressCap
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// stream is the pooled plumbing shared by every streaming codec: a source
// reader over the compressed bytes, the cap, and the read buffer.
type stream struct {
	src bytes.Reader
	cap capReader
	buf *bufio.Reader
}

func (s *stream) reset(dec io.Reader, limit int64) *bufio.Reader {
	s.cap = capReader{r: dec, left: limit}
	if s.buf == nil {
		s.buf = bufio.NewReaderSize(&s.cap, streamBufSize)
	} else {
		s.buf.Reset(&s.cap)
	}
	return s.buf
}

type gzipStream struct {
	stream
	dec gzip.Reader
}

type lz4Stream struct {
	stream
	dec *lz4.Reader
}

type zstdStream struct {
	stream
	dec *zstd.Decoder
}

type snappyStream struct {
	stream
	dec xerialReader
}

var (
	gzipPool   = sync.Pool{New: func() any { return new(gzipStream) }}
	lz4Pool    = sync.Pool{New: func() any { return &lz4Stream{dec: lz4.NewReader(nil)} }}
	zstdPool   sync.Pool // *zstdStream; created on demand, since creation can fail
	snappyPool = sync.Pool{New: func() any { return new(snappyStream) }}
	bufPool    sync.Pool // *[]byte scratch for raw snappy
)

// walkCompressed decompresses data with codec, never producing more than
// limit bytes, and walks count records from it, requiring that nothing
// follows the last record unless visit ends the walk early.
func walkCompressed(codec int8, data []byte, count int32, limit int64, visit recordVisitor) error {
	if codec == CompressionSnappy && !isXerial(data) {
		return walkRawSnappy(data, count, limit, visit)
	}
	return withStream(codec, data, limit, func(r *bufio.Reader) error { return walkStream(r, count, visit) })
}

// withStream runs fn on a reader of data decompressed with codec (raw
// snappy excepted), never producing more than limit bytes.
func withStream(codec int8, data []byte, limit int64, fn func(*bufio.Reader) error) error {
	switch codec {
	case CompressionGzip:
		s := gzipPool.Get().(*gzipStream)
		defer gzipPool.Put(s)
		s.src.Reset(data)
		if err := s.dec.Reset(&s.src); err != nil {
			return fmt.Errorf("gzip header: %w", err)
		}
		return fn(s.reset(&s.dec, limit))
	case CompressionSnappy:
		s := snappyPool.Get().(*snappyStream)
		defer snappyPool.Put(s)
		s.dec.reset(data, limit)
		return fn(s.reset(&s.dec, limit))
	case CompressionLZ4:
		s := lz4Pool.Get().(*lz4Stream)
		defer lz4Pool.Put(s)
		s.src.Reset(data)
		s.dec.Reset(&s.src)
		return fn(s.reset(s.dec, limit))
	case CompressionZstd:
		s, err := getZstd()
		if err != nil {
			return err
		}
		defer zstdPool.Put(s)
		s.src.Reset(data)
		window := max(uint64(limit), minZstdWindow)
		if err := s.dec.ResetWithOptions(&s.src, zstd.WithDecoderMaxWindow(window), zstd.WithDecoderMaxMemory(window)); err != nil {
			return fmt.Errorf("zstd: %w", err)
		}
		return fn(s.reset(s.dec, limit))
	default:
		return fmt.Errorf("unknown compression codec %d", codec)
	}
}

func getZstd() (*zstdStream, error) {
	if s, ok := zstdPool.Get().(*zstdStream); ok {
		return s, nil
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	return &zstdStream{dec: dec}, nil
}

// walkStream walks count records from r and then requires end of stream,
// which also makes codecs with trailers (gzip, lz4, zstd checksums) verify
// them. A walk that visit ends early stops reading there.
func walkStream(r *bufio.Reader, count int32, visit recordVisitor) error {
	stopped, err := walkRecords(r, count, visit)
	if err != nil || stopped {
		return err
	}
	if _, err := r.ReadByte(); err == nil {
		return errors.New("bytes follow the last record")
	} else if !errors.Is(err, io.EOF) {
		return fmt.Errorf("after the last record: %w", err)
	}
	return nil
}

func getBuf(n int) *[]byte {
	if p, ok := bufPool.Get().(*[]byte); ok && cap(*p) >= n {
		return p
	}
	b := make([]byte, 0, n)
	return &b
}

func putBuf(p *[]byte) {
	if cap(*p) <= maxPooledBuf {
		bufPool.Put(p)
	}
}
