package wire

import (
	"encoding/binary"
	"fmt"
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sizes of the structs kmsg allocates per Produce topic and partition.
var (
	produceTopicSize     = int64(reflect.TypeFor[kmsg.ProduceRequestTopic]().Size())
	producePartitionSize = int64(reflect.TypeFor[kmsg.ProduceRequestTopicPartition]().Size())
)

// Produce frames may be up to MaxRequestBytes, so what decoding them
// allocates must stay near the frame size: a legitimate request is mostly
// record batches, which kmsg leaves in the frame. Decoding may allocate at
// most produceCostFactor times the frame, at most maxProduceDecodeRoom,
// plus produceCostSlack (produceRoom).
const (
	produceCostFactor = 2
	produceCostSlack  = 4 << 10
)

// checkProduceCost walks a Produce body of the given version without
// allocating and rejects it if kmsg would allocate much more than the
// frame to decode it: many empty partitions, or tagged fields (each a map)
// on every topic and partition.
func checkProduceCost(body []byte, version int16, frameSize int) error {
	_, err := checkProduceCostWithin(body, version, frameSize, produceRoom(frameSize))
	return err
}

// checkProduceCostWithin is checkProduceCost with the limit given, and
// returns the cost.
func checkProduceCostWithin(body []byte, version int16, frameSize int, limit int64) (int64, error) {
	cost, err := produceDecodeCost(body, version)
	if err != nil {
		return 0, fmt.Errorf("produce v%d: %w", version, err)
	}
	if cost > limit {
		return 0, fmt.Errorf("produce v%d: decoding a %d-byte frame would allocate about %d bytes (limit %d): %w",
			version, frameSize, cost, limit, ErrMalformedBody)
	}
	return cost, nil
}

// produceDecodeCost returns about how many bytes kmsg allocates to decode a
// Produce body: the topic and partition structs, the copied strings and
// the tag maps. It follows the Produce schema of versions 0 to 13.
func produceDecodeCost(body []byte, version int16) (int64, error) {
	flexible := version >= 9
	s := costScanner{b: body, flexible: flexible}
	var cost int64
	if version >= 3 {
		if n := s.stringLen(); n >= 0 {
			cost += 16 + int64(n) // the *string and its bytes
		}
	}
	s.skip(2 + 4) // acks, timeout
	topics := s.arrayLen()
	cost += int64(topics) * produceTopicSize
	for range topics {
		if s.err != nil {
			break
		}
		if version >= 13 {
			s.skip(16) // topic id
		} else {
			cost += int64(max(s.stringLen(), 0))
		}
		partitions := s.arrayLen()
		cost += int64(partitions) * producePartitionSize
		for range partitions {
			if s.err != nil {
				break
			}
			s.skip(4) // partition index
			s.bytesField()
			cost += s.tags()
		}
		cost += s.tags()
	}
	cost += s.tags()
	if s.err != nil {
		return 0, s.err
	}
	return cost, nil
}

// costScanner reads just enough of a body to follow its structure. Every
// length is bounded by the bytes left; the first problem sticks in err.
type costScanner struct {
	b        []byte
	flexible bool
	err      error
}

func (s *costScanner) fail(what string) {
	if s.err == nil {
		s.err = fmt.Errorf("%s: %w", what, ErrMalformedBody)
	}
	s.b = nil
}

func (s *costScanner) skip(n int) {
	if n < 0 || n > len(s.b) {
		s.fail(fmt.Sprintf("%d bytes needed, %d left", n, len(s.b)))
		return
	}
	s.b = s.b[n:]
}

func (s *costScanner) int16() int {
	if len(s.b) < 2 {
		s.fail("truncated int16")
		return 0
	}
	v := int16(binary.BigEndian.Uint16(s.b))
	s.b = s.b[2:]
	return int(v)
}

func (s *costScanner) int32() int {
	if len(s.b) < 4 {
		s.fail("truncated int32")
		return 0
	}
	v := int32(binary.BigEndian.Uint32(s.b))
	s.b = s.b[4:]
	return int(v)
}

func (s *costScanner) uvarint() int {
	v, n := binary.Uvarint(s.b)
	if n <= 0 || v > 1<<32-1 {
		s.fail("bad uvarint")
		return 0
	}
	s.b = s.b[n:]
	return int(v)
}

// length reads a length: compact (uvarint of n+1) in flexible versions,
// else int16 or int32. A negative result means null.
func (s *costScanner) length(wide bool) int {
	switch {
	case s.flexible:
		return s.uvarint() - 1
	case wide:
		return s.int32()
	default:
		return s.int16()
	}
}

// stringLen skips a (nullable) string and returns its length, -1 if null.
func (s *costScanner) stringLen() int {
	n := s.length(false)
	if n > 0 {
		s.skip(n)
	}
	return n
}

// bytesField skips a (nullable) byte array.
func (s *costScanner) bytesField() {
	if n := s.length(true); n > 0 {
		s.skip(n)
	}
}

// arrayLen reads an array length; null and empty are 0. Each element takes
// at least one byte, so a count above the bytes left is malformed.
func (s *costScanner) arrayLen() int {
	n := s.length(true)
	if n > len(s.b) {
		s.fail(fmt.Sprintf("array of %d elements in %d bytes", n, len(s.b)))
		return 0
	}
	return max(n, 0)
}

// maxProduceTags bounds the tagged fields of one section of a Produce
// request: Produce defines none, so a client sends none; each costs kmsg
// a map entry.
const maxProduceTags = 16

// tags skips a tagged-field section in flexible versions and returns the
// cost of the map kmsg keeps for it.
func (s *costScanner) tags() int64 {
	if !s.flexible {
		return 0
	}
	n := s.uvarint()
	if n > maxProduceTags {
		s.fail(fmt.Sprintf("%d tagged fields in one section, at most %d", n, maxProduceTags))
		return 0
	}
	for i := 0; i < n && s.err == nil; i++ {
		s.uvarint() // tag
		s.skip(s.uvarint())
	}
	if n == 0 {
		return 0
	}
	return mapBaseBytes + int64(n)*mapEntryBytes
}
