package wire

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// captureConn is a net.Conn that keeps what is written to it.
type captureConn struct {
	net.Conn
	out    bytes.Buffer
	writes int
}

func (c *captureConn) Write(b []byte) (int, error)      { c.writes++; return c.out.Write(b) }
func (c *captureConn) SetWriteDeadline(time.Time) error { return nil }

// randomFetch builds a Fetch response of version v from rng: topics,
// partitions, small and large record batches (nil, empty, referenced),
// aborted transactions, and every tagged field, set or not.
func randomFetch(rng *rand.Rand, v int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = v
	resp.ThrottleMillis = rng.Int32N(100)
	resp.ErrorCode = int16(rng.IntN(3))
	resp.SessionID = rng.Int32()
	for range rng.IntN(4) {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = string(bytes.Repeat([]byte{'t'}, rng.IntN(20)))
		t.TopicID[rng.IntN(16)] = byte(rng.IntN(256))
		for range rng.IntN(4) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition, p.ErrorCode = rng.Int32N(50), int16(rng.IntN(2))
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int64N(1e9), rng.Int64N(1e9), rng.Int64N(1e9)
			switch rng.IntN(3) {
			case 0:
				p.AbortedTransactions = nil
			case 1:
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			default:
				for range 1 + rng.IntN(3) {
					p.AbortedTransactions = append(p.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: rng.Int64(), FirstOffset: rng.Int64()})
				}
			}
			p.PreferredReadReplica = rng.Int32N(3) - 1
			switch rng.IntN(4) {
			case 0:
				p.RecordBatches = nil
			case 1:
				p.RecordBatches = []byte{}
			case 2:
				p.RecordBatches = bytes.Repeat([]byte{byte(rng.IntN(256))}, rng.IntN(100))
			default:
				p.RecordBatches = bytes.Repeat([]byte{byte(rng.IntN(256))}, minRefBytes+rng.IntN(3*minRefBytes))
			}
			if rng.IntN(2) == 0 {
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = rng.Int32N(9), rng.Int64N(99)
			}
			if rng.IntN(2) == 0 {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = rng.Int32N(9), rng.Int32N(99)
			}
			if rng.IntN(2) == 0 {
				p.SnapshotID.EndOffset, p.SnapshotID.Epoch = rng.Int64N(99), rng.Int32N(9)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	for range rng.IntN(3) {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port = rng.Int32N(5), "host", 9092
		if rng.IntN(2) == 0 {
			rack := "r1"
			b.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	return resp
}

// moveToFiles moves some of resp's record batches into files, as a
// handler that sends them with sendfile leaves them, and returns those
// files (closed when the test ends).
func moveToFiles(t testing.TB, rng *rand.Rand, resp *kmsg.FetchResponse) []FileRecords {
	var files []FileRecords
	i := 0
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			p := &resp.Topics[ti].Partitions[pi]
			if p.RecordBatches != nil && rng.IntN(2) == 0 {
				f, err := os.CreateTemp(t.TempDir(), "records")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				// Records at an offset of the file, past other bytes.
				pad := rng.IntN(100)
				if _, err := f.WriteAt(p.RecordBatches, int64(pad)); err != nil {
					t.Fatal(err)
				}
				for len(files) < i {
					files = append(files, FileRecords{})
				}
				files = append(files, FileRecords{File: f, Off: int64(pad), Len: len(p.RecordBatches)})
				p.RecordBatches = nil
			}
			i++
		}
	}
	return files
}

// FuzzFetchEncoder: the writev Fetch encoder sends exactly what kmsg
// encodes, for every version, whatever the response holds.
func FuzzFetchEncoder(f *testing.F) {
	for v := range 17 {
		f.Add(uint64(v), uint8(v))
	}
	f.Fuzz(func(t *testing.T, seed uint64, version uint8) {
		v := int16(version % 17)
		rng := rand.New(rand.NewPCG(seed, uint64(v)))
		var c captureConn
		w := responseWriter{nc: &c, timeout: time.Second, onWrite: func() {}}
		var want []byte
		// Several responses, as the writer batches them, with another
		// kind of response between.
		for i := range 3 {
			resp := randomFetch(rng, v)
			if v >= 12 && rng.IntN(4) == 0 {
				// A field this encoder does not know: kmsg encodes it,
				// after the records left in files are read.
				resp.UnknownTags.Set(99, []byte{7})
			}
			want = AppendResponse(want, int32(i), int16(kmsg.Fetch), resp)
			files := moveToFiles(t, rng, resp)
			if err := w.append(int32(i), int16(kmsg.Fetch), resp, files); err != nil {
				t.Fatal(err)
			}
			meta := kmsg.NewPtrMetadataResponse()
			meta.Version = 9
			want = AppendResponse(want, 100+int32(i), int16(kmsg.Metadata), meta)
			if err := w.append(100+int32(i), int16(kmsg.Metadata), meta, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.out.Bytes(), want) {
			t.Fatalf("version %d: the writev encoder sent %d bytes that differ from kmsg's %d", v, c.out.Len(), len(want))
		}
		if len(w.refs) != 0 || w.refBytes != 0 || len(w.buf) != 0 {
			t.Fatalf("the writer kept %d refs (%d bytes), %d buffered bytes after a flush", len(w.refs), w.refBytes, len(w.buf))
		}
	})
}

// TestFetchRecordsReferenced: large record batches are not copied into
// the write buffer.
func TestFetchRecordsReferenced(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	tp := kmsg.NewFetchResponseTopic()
	p := kmsg.NewFetchResponseTopicPartition()
	p.RecordBatches = make([]byte, 1<<20)
	tp.Partitions = append(tp.Partitions, p)
	resp.Topics = append(resp.Topics, tp)
	var c captureConn
	w := responseWriter{nc: &c, timeout: time.Second, onWrite: func() {}}
	w.buf = make([]byte, 0, 4096)
	if err := w.append(1, int16(kmsg.Fetch), resp, nil); err != nil {
		t.Fatal(err)
	}
	if len(w.refs) != 0 || cap(w.buf) > 4096 || c.out.Len() != len(AppendResponse(nil, 1, int16(kmsg.Fetch), resp)) {
		t.Fatalf("after a 1 MiB fetch response: buffer cap %d, %d bytes written", cap(w.buf), c.out.Len())
	}
}

// TestAfterWrite: what a response referenced is released only once it has
// been written; a response copied whole is released at once.
func TestAfterWrite(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 11
	tp := kmsg.NewFetchResponseTopic()
	p := kmsg.NewFetchResponseTopicPartition()
	p.RecordBatches = bytes.Repeat([]byte{7}, minRefBytes) // referenced, and under the flush threshold
	tp.Partitions = append(tp.Partitions, p)
	resp.Topics = append(resp.Topics, tp)

	var c captureConn
	w := responseWriter{nc: &c, timeout: time.Second, onWrite: func() {}}
	released := 0
	if err := w.append(1, int16(kmsg.Fetch), resp, nil); err != nil {
		t.Fatal(err)
	}
	w.afterWrite([]func(){func() { released++ }})
	if released != 0 || c.out.Len() != 0 {
		t.Fatalf("released %d times with %d bytes written, before the write", released, c.out.Len())
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	if released != 1 || !bytes.Equal(c.out.Bytes(), AppendResponse(nil, 1, int16(kmsg.Fetch), resp)) {
		t.Fatalf("after the write: released %d times, %d bytes written", released, c.out.Len())
	}
	// Small record batches are copied: released at once.
	resp.Topics[0].Partitions[0].RecordBatches = []byte{1, 2, 3}
	if err := w.append(2, int16(kmsg.Fetch), resp, nil); err != nil {
		t.Fatal(err)
	}
	w.afterWrite([]func(){func() { released++ }})
	if released != 2 {
		t.Fatalf("a copied response was not released at once")
	}
}

func fetchWith(v int16, parts ...[]byte) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = v
	tp := kmsg.NewFetchResponseTopic()
	tp.Topic = "t"
	for i, b := range parts {
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition = int32(i)
		p.RecordBatches = b
		tp.Partitions = append(tp.Partitions, p)
	}
	resp.Topics = append(resp.Topics, tp)
	return resp
}

// TestFrameTooLargeKeepsPrevious: a response over what a frame holds is
// dropped whole, and the response before it (whose last records sit where
// the dropped frame began) still goes out whole.
func TestFrameTooLargeKeepsPrevious(t *testing.T) {
	var c captureConn
	w := responseWriter{nc: &c, timeout: time.Second, onWrite: func() {}}
	a := fetchWith(11, bytes.Repeat([]byte{7}, minRefBytes)) // ends with its records
	if err := w.append(1, int16(kmsg.Fetch), a, nil); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 64<<20)
	var parts [][]byte
	for range 33 { // over 2 GiB, referenced, not copied
		parts = append(parts, big)
	}
	if err := w.append(2, int16(kmsg.Fetch), fetchWith(11, parts...), nil); err == nil {
		t.Fatal("want a frame-size error")
	}
	_ = w.flush()
	if want := AppendResponse(nil, 1, int16(kmsg.Fetch), a); !bytes.Equal(c.out.Bytes(), want) {
		t.Fatalf("the previous response went out as %d bytes, want %d", c.out.Len(), len(want))
	}
}
