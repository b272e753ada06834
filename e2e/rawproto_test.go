package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/internal/node"
)

// rawConn speaks the Kafka protocol by hand over one TCP connection.
type rawConn struct {
	t    testing.TB
	c    net.Conn
	corr int32
	fmt  *kmsg.RequestFormatter
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("brokerd-e2e-raw"))}
}

// send writes req at version v and returns its correlation id.
func (rc *rawConn) send(req kmsg.Request, v int16) int32 {
	rc.t.Helper()
	rc.corr++
	req.SetVersion(v)
	buf := rc.fmt.AppendRequest(nil, req, rc.corr)
	rc.writeRaw(buf)
	return rc.corr
}

func (rc *rawConn) writeRaw(b []byte) {
	rc.t.Helper()
	rc.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.c.Write(b); err != nil {
		rc.t.Fatalf("write %d bytes: %v", len(b), err)
	}
}

// readFrame reads one response frame: its correlation id and what follows.
func (rc *rawConn) readFrame(timeout time.Duration) (int32, []byte, error) {
	rc.c.SetReadDeadline(time.Now().Add(timeout))
	var sz [4]byte
	if _, err := io.ReadFull(rc.c, sz[:]); err != nil {
		return 0, nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 4 || n > 64<<20 {
		return 0, nil, fmt.Errorf("response frame size %d", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(rc.c, body); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(body)), body[4:], nil
}

// recv reads the response to corr into resp (decoded at version v).
func (rc *rawConn) recv(corr int32, resp kmsg.Response, v int16) {
	rc.t.Helper()
	got, body, err := rc.readFrame(10 * time.Second)
	if err != nil {
		rc.t.Fatalf("read response to correlation id %d (api key %d v%d): %v", corr, resp.Key(), v, err)
	}
	if got != corr {
		rc.t.Fatalf("response correlation id %d, want %d", got, corr)
	}
	resp.SetVersion(v)
	// Flexible responses have a tagged-field section in the header,
	// except ApiVersions (KIP-511).
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		if len(body) == 0 || body[0] != 0 {
			rc.t.Fatalf("api key %d v%d: response header tagged fields %x, want 00", resp.Key(), v, body[:min(len(body), 4)])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		rc.t.Fatalf("decode api key %d v%d response (%d bytes): %v", resp.Key(), v, len(body), err)
	}
}

// expectClosed waits until the server closes the connection, failing if it
// answers or stays open past timeout.
func (rc *rawConn) expectClosed(what string, timeout time.Duration) {
	rc.t.Helper()
	corr, body, err := rc.readFrame(timeout)
	switch {
	case err == nil:
		rc.t.Errorf("%s: got a response (correlation id %d, %d bytes), want the connection closed", what, corr, len(body))
	case isClosedErr(err):
	default:
		rc.t.Errorf("%s: connection not closed within %s: %v", what, timeout, err)
	}
}

func isClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// roundTrip sends req at v and decodes the response.
func roundTrip[R kmsg.Response](rc *rawConn, req kmsg.Request, v int16, resp R) R {
	rc.t.Helper()
	corr := rc.send(req, v)
	rc.recv(corr, resp, v)
	return resp
}

// healthy checks, on a fresh connection, that the broker answers
// ApiVersions and Metadata.
func healthy(t testing.TB, addr, after string) {
	t.Helper()
	rc := dialRaw(t, addr)
	av := roundTrip(rc, kmsg.NewPtrApiVersionsRequest(), 3, kmsg.NewPtrApiVersionsResponse())
	if av.ErrorCode != 0 || len(av.ApiKeys) == 0 {
		t.Fatalf("after %s: ApiVersions v3 error %d with %d keys", after, av.ErrorCode, len(av.ApiKeys))
	}
	md := roundTrip(rc, kmsg.NewPtrMetadataRequest(), 12, kmsg.NewPtrMetadataResponse())
	if len(md.Brokers) != 1 {
		t.Fatalf("after %s: Metadata v12 lists %d brokers", after, len(md.Brokers))
	}
	rc.c.Close()
}

func produceReq(topic string, p int32, acks int16, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = p
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func rawCreateTopic(t testing.TB, rc *rawConn, name string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	req.Topics = append(req.Topics, rt)
	resp := roundTrip(rc, req, 7, kmsg.NewPtrCreateTopicsResponse())
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics %q: %+v", name, resp.Topics)
	}
}

func rawEndOffset(t testing.TB, rc *rawConn, topic string, p int32) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = p, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := roundTrip(rc, req, 8, kmsg.NewPtrListOffsetsResponse())
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ListOffsets(latest) %s/%d: %+v", topic, p, resp.Topics)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// TestRawApiVersionsUnsupported: ApiVersions at v99 is answered at v0 with
// UNSUPPORTED_VERSION (35) and the supported ApiVersions range (KIP-511),
// and the connection keeps working at v3.
func TestRawApiVersionsUnsupported(t *testing.T) {
	n := startNode(t)
	rc := dialRaw(t, n.KafkaAddr())

	corr := rc.send(kmsg.NewPtrApiVersionsRequest(), 99)
	got, body, err := rc.readFrame(5 * time.Second)
	if err != nil {
		t.Fatalf("ApiVersions v99: no response: %v", err)
	}
	if got != corr {
		t.Fatalf("ApiVersions v99: correlation id %d, want %d", got, corr)
	}
	v0 := kmsg.NewPtrApiVersionsResponse()
	v0.SetVersion(0)
	if err := v0.ReadFrom(body); err != nil {
		t.Fatalf("ApiVersions v99: the answer does not decode as ApiVersions v0 (%x): %v", body, err)
	}
	if v0.ErrorCode != 35 {
		t.Errorf("ApiVersions v99: error code %d, want 35 (UNSUPPORTED_VERSION)", v0.ErrorCode)
	}
	var avRange *kmsg.ApiVersionsResponseApiKey
	for i := range v0.ApiKeys {
		if v0.ApiKeys[i].ApiKey == int16(kmsg.ApiVersions) {
			avRange = &v0.ApiKeys[i]
		}
	}
	if avRange == nil || avRange.MinVersion != 0 || avRange.MaxVersion < 3 {
		t.Errorf("ApiVersions v99: answer lists ApiVersions as %+v, want 0..(3 or more)", avRange)
	}

	// The same connection keeps working, at v3 and at every supported
	// version.
	for _, v := range []int16{3, 0, 1, 2, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "brokerd-e2e", "1.0"
		resp := roundTrip(rc, req, v, kmsg.NewPtrApiVersionsResponse())
		if resp.ErrorCode != 0 {
			t.Errorf("ApiVersions v%d after v99: error %d", v, resp.ErrorCode)
		}
		want := map[int16][2]int16{0: {3, 11}, 1: {4, 16}, 2: {0, 8}, 3: {0, 12}, 18: {0, 4}, 19: {0, 7}}
		for _, k := range resp.ApiKeys {
			if w, ok := want[k.ApiKey]; ok {
				if k.MinVersion != w[0] || k.MaxVersion != w[1] {
					t.Errorf("ApiVersions v%d: key %d advertised %d-%d, want %d-%d", v, k.ApiKey, k.MinVersion, k.MaxVersion, w[0], w[1])
				}
				delete(want, k.ApiKey)
			}
		}
		if len(want) > 0 {
			t.Errorf("ApiVersions v%d: keys missing from the answer: %v", v, want)
		}
	}
	// Other keys above their range close the connection (Kafka does the
	// same); the broker itself keeps serving.
	rc.send(kmsg.NewPtrMetadataRequest(), 99)
	rc.expectClosed("Metadata v99", 5*time.Second)
	healthy(t, n.KafkaAddr(), "Metadata v99")
}

// TestRawUnknownApiKey: a request with an unknown api key closes that
// connection only.
func TestRawUnknownApiKey(t *testing.T) {
	n := startNode(t)
	for _, key := range []int16{1000, -1, 32767, 71, 72} {
		rc := dialRaw(t, n.KafkaAddr())
		// Header v1: key, version, correlation id, client id; then junk.
		var b []byte
		b = binary.BigEndian.AppendUint16(b, uint16(key))
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint32(b, 7)
		b = binary.BigEndian.AppendUint16(b, 3)
		b = append(b, "e2e"...)
		b = append(b, 0, 0, 0, 0)
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
		rc.writeRaw(append(frame, b...))
		corr, body, err := rc.readFrame(5 * time.Second)
		switch {
		case err == nil && (key == 71 || key == 72) && corr == 7:
			// An error answer for the telemetry keys is fine too.
			t.Logf("api key %d: answered with %d bytes", key, len(body))
		case err == nil:
			t.Errorf("api key %d: got a response (correlation id %d, %d bytes), want the connection closed", key, corr, len(body))
		case !isClosedErr(err):
			t.Errorf("api key %d: connection neither answered nor closed within 5s: %v", key, err)
		}
		healthy(t, n.KafkaAddr(), fmt.Sprintf("api key %d", key))
	}
}

// TestRawHugeFrames: frames claiming 2 GiB (or a negative size) are refused
// without allocating them; frames under the cap but never completed give
// their memory budget back when the client goes away.
func TestRawHugeFrames(t *testing.T) {
	n := startNode(t, func(c *node.Config) {
		c.Wire.MaxRequestBytes = 4 << 20
		c.Wire.MaxInFlightBytes = 16 << 20
	})
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, tc := range []struct {
		name string
		size uint32
		key  int16
	}{
		{"2 GiB produce", 0x7fffffff, 0},
		{"2 GiB metadata", 0x7fffffff, 3},
		{"negative size", 0x80000000, 0},
		{"-1 size", 0xffffffff, 18},
		{"size 0", 0, 18},
		{"size 3", 3, 18},
		{"2 MiB metadata (above the non-Produce cap)", 2 << 20, 3},
		{"5 MiB produce (above socket.request.max.bytes)", 5 << 20, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, n.KafkaAddr())
			b := binary.BigEndian.AppendUint32(nil, tc.size)
			b = binary.BigEndian.AppendUint16(b, uint16(tc.key))
			b = binary.BigEndian.AppendUint16(b, 0)
			b = binary.BigEndian.AppendUint32(b, 1)
			rc.writeRaw(b)
			rc.expectClosed(fmt.Sprintf("frame claiming %d bytes", int32(tc.size)), 5*time.Second)
		})
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
		t.Errorf("refusing oversized frames allocated %d MiB in total", grew>>20)
	}
	healthy(t, n.KafkaAddr(), "oversized frames")

	// Three 3 MiB produce frames (under the 4 MiB cap) that never complete:
	// together they exceed the 8 MiB in-flight budget. When their clients
	// go away, the budget must come back for the next request.
	var conns []*rawConn
	for i := 0; i < 3; i++ {
		rc := dialRaw(t, n.KafkaAddr())
		b := binary.BigEndian.AppendUint32(nil, 3<<20)
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint16(b, 9)
		b = binary.BigEndian.AppendUint32(b, 1)
		rc.writeRaw(b)
		conns = append(conns, rc)
	}
	time.Sleep(200 * time.Millisecond)
	for _, rc := range conns {
		rc.c.Close()
	}
	rc := dialRaw(t, n.KafkaAddr())
	rawCreateTopic(t, rc, "after-partial", 1)
	// 700 KiB: under the default max.message.bytes (1 MiB).
	big := buildBatch([]testRecord{{Value: make([]byte, 700<<10)}}, batchOpts{FirstTimestamp: time.Now().UnixMilli()})
	for i := 0; i < 3; i++ {
		resp := roundTrip(rc, produceReq("after-partial", 0, -1, big), 9, kmsg.NewPtrProduceResponse())
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatalf("700 KiB produce #%d after abandoned partial frames: error %d", i, c)
		}
	}
	if e := rawEndOffset(t, rc, "after-partial", 0); e != 3 {
		t.Errorf("end offset %d after three 700 KiB produces, want 3", e)
	}
}

// TestRawGarbage sends random bytes, random frames and frames with valid
// headers and random bodies. Each connection is answered or closed; the
// broker keeps serving, appends nothing, and leaks no goroutines.
func TestRawGarbage(t *testing.T) {
	n := startNode(t)
	addr := n.KafkaAddr()
	setup := dialRaw(t, addr)
	rawCreateTopic(t, setup, "victim", 2)
	good := buildBatch(simpleRecords("good", 3), batchOpts{FirstTimestamp: time.Now().UnixMilli()})
	if resp := roundTrip(setup, produceReq("victim", 0, -1, good), 9, kmsg.NewPtrProduceResponse()); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce a good batch: error %d", resp.Topics[0].Partitions[0].ErrorCode)
	}
	ends := [2]int64{rawEndOffset(t, setup, "victim", 0), rawEndOffset(t, setup, "victim", 1)}
	setup.c.Close()
	time.Sleep(100 * time.Millisecond)
	goroutinesBefore := runtime.NumGoroutine()

	av := roundTrip(dialRaw(t, addr), kmsg.NewPtrApiVersionsRequest(), 3, kmsg.NewPtrApiVersionsResponse())
	type kv struct{ key, min, max int16 }
	var keys []kv
	for _, k := range av.ApiKeys {
		keys = append(keys, kv{k.ApiKey, k.MinVersion, k.MaxVersion})
	}

	rng := rand.New(rand.NewPCG(20261202, 1))
	iters := 300
	if longTests() {
		iters = 3000
	}
	var frames [][]byte
	for i := 0; i < iters; i++ {
		var f []byte
		switch i % 4 {
		case 0: // anything at all
			f = make([]byte, 1+rng.IntN(64))
			for j := range f {
				f[j] = byte(rng.UintN(256))
			}
		case 1: // a right-sized frame of junk
			body := make([]byte, 8+rng.IntN(256))
			for j := range body {
				body[j] = byte(rng.UintN(256))
			}
			f = binary.BigEndian.AppendUint32(nil, uint32(len(body)))
			f = append(f, body...)
		default: // a valid header for an advertised api, then junk
			k := keys[rng.IntN(len(keys))]
			v := k.min + int16(rng.IntN(int(k.max-k.min)+1))
			req := kmsg.RequestForKey(k.key)
			req.SetVersion(v)
			var body []byte
			body = binary.BigEndian.AppendUint16(body, uint16(k.key))
			body = binary.BigEndian.AppendUint16(body, uint16(v))
			body = binary.BigEndian.AppendUint32(body, uint32(i))
			body = binary.BigEndian.AppendUint16(body, 3)
			body = append(body, "e2e"...)
			if req.IsFlexible() {
				body = append(body, 0)
			}
			if i%8 == 3 {
				// A real request, then truncated or bit-flipped.
				valid := req.AppendTo(nil)
				if len(valid) > 0 {
					if rng.IntN(2) == 0 {
						valid = valid[:rng.IntN(len(valid))]
					} else {
						valid[rng.IntN(len(valid))] ^= byte(1 + rng.IntN(255))
					}
				}
				body = append(body, valid...)
			} else {
				junk := make([]byte, rng.IntN(128))
				for j := range junk {
					junk[j] = byte(rng.UintN(256))
				}
				body = append(body, junk...)
			}
			f = binary.BigEndian.AppendUint32(nil, uint32(len(body)))
			f = append(f, body...)
		}
		frames = append(frames, f)
	}

	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var mu sync.Mutex
	outcomes := map[string]int{}
	for i, f := range frames {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Errorf("frame %d: dial: %v (is the broker still up?)", i, err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(500 * time.Millisecond))
			if _, err := c.Write(f); err != nil {
				mu.Lock()
				outcomes["closed during write"]++
				mu.Unlock()
				return
			}
			_, err = io.Copy(io.Discard, c)
			var o string
			var ne net.Error
			switch {
			case err == nil || isClosedErr(err):
				o = "closed by broker"
			case errors.As(err, &ne) && ne.Timeout():
				o = "left open (waiting for more bytes, or answered)"
			default:
				o = "error: " + err.Error()
			}
			mu.Lock()
			outcomes[o]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("%d garbage connections: %v", len(frames), outcomes)

	healthy(t, addr, fmt.Sprintf("%d garbage connections", len(frames)))
	rc := dialRaw(t, addr)
	for p := int32(0); p < 2; p++ {
		if e := rawEndOffset(t, rc, "victim", p); e != ends[p] {
			t.Errorf("partition %d end offset moved from %d to %d after garbage", p, ends[p], e)
		}
	}
	rc.c.Close()

	// Connections we closed must be cleaned up on the broker side.
	deadline := time.Now().Add(10 * time.Second)
	for {
		g := runtime.NumGoroutine()
		if g <= goroutinesBefore+10 {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			os.WriteFile(t.TempDir()+"/goroutines.txt", buf, 0o644)
			t.Errorf("%d goroutines 10s after all garbage connections closed, %d before: a connection leak?\n%.8000s", g, goroutinesBefore, buf)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRawCorruptBatches: a produce whose batch fails validation gets an
// error and appends nothing; the connection keeps working.
func TestRawCorruptBatches(t *testing.T) {
	n := startNode(t)
	rc := dialRaw(t, n.KafkaAddr())
	const topic = "crc"
	rawCreateTopic(t, rc, topic, 1)
	now := time.Now().UnixMilli()

	for _, v := range []int16{3, 7, 9, 11} {
		good := buildBatch(simpleRecords("good", 3), batchOpts{FirstTimestamp: now})
		before := rawEndOffset(t, rc, topic, 0)
		resp := roundTrip(rc, produceReq(topic, 0, -1, good), v, kmsg.NewPtrProduceResponse())
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != before {
			t.Fatalf("Produce v%d of a valid 3-record batch: error %d base offset %d, want 0 and %d", v, p.ErrorCode, p.BaseOffset, before)
		}
		if e := rawEndOffset(t, rc, topic, 0); e != before+3 {
			t.Fatalf("end offset %d after a valid 3-record batch, want %d", e, before+3)
		}

		corrupt := buildBatch(simpleRecords("bad", 3), batchOpts{FirstTimestamp: now})
		corrupt[len(corrupt)-3] ^= 0x40 // inside the last record: the CRC no longer matches
		before = rawEndOffset(t, rc, topic, 0)
		resp = roundTrip(rc, produceReq(topic, 0, -1, corrupt), v, kmsg.NewPtrProduceResponse())
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != 2 {
			t.Errorf("Produce v%d with a bad CRC: error %d, want 2 (CORRUPT_MESSAGE)", v, c)
		}
		if e := rawEndOffset(t, rc, topic, 0); e != before {
			t.Errorf("Produce v%d with a bad CRC moved the end offset from %d to %d", v, before, e)
		}
	}

	// acks=0: no response, nothing appended, and the connection closes, as
	// Kafka closes it: the only way an acks=0 client learns of a refusal.
	// A good acks=0 Produce leaves the connection open.
	before := rawEndOffset(t, rc, topic, 0)
	rc.send(produceReq(topic, 0, 0, buildBatch(simpleRecords("good0", 1), batchOpts{FirstTimestamp: now})), 9)
	// Not awaited by the broker: it lands shortly.
	for deadline := time.Now().Add(5 * time.Second); rawEndOffset(t, rc, topic, 0) != before+1; {
		if time.Now().After(deadline) {
			t.Fatalf("a good acks=0 Produce: end offset %d, want %d", rawEndOffset(t, rc, topic, 0), before+1)
		}
		time.Sleep(10 * time.Millisecond)
	}
	before++
	acks0 := dialRaw(t, n.KafkaAddr())
	corrupt := buildBatch(simpleRecords("bad0", 2), batchOpts{FirstTimestamp: now})
	corrupt[30] ^= 0xff // in the first timestamp, covered by the CRC
	acks0.send(produceReq(topic, 0, 0, corrupt), 9)
	acks0.expectClosed("an acks=0 Produce with a bad CRC", 5*time.Second)
	if e := rawEndOffset(t, rc, topic, 0); e != before {
		t.Errorf("acks=0 Produce with a bad CRC moved the end offset from %d to %d", before, e)
	}

	// Batches whose CRC is right but whose contents lie.
	bad := []struct {
		name  string
		batch []byte
	}{
		{"record count 5 for 3 records", buildBatch(simpleRecords("c", 3), batchOpts{FirstTimestamp: now, CountOverride: int32p(5)})},
		{"record count 2 for 3 records", buildBatch(simpleRecords("c", 3), batchOpts{FirstTimestamp: now, CountOverride: int32p(2)})},
		{"zero records", buildBatch(nil, batchOpts{FirstTimestamp: now})},
		{"magic 1", buildBatch(simpleRecords("m", 1), batchOpts{FirstTimestamp: now, Magic: 1})},
		{"magic 3", buildBatch(simpleRecords("m", 1), batchOpts{FirstTimestamp: now, Magic: 3})},
		{"truncated batch", buildBatch(simpleRecords("t", 3), batchOpts{FirstTimestamp: now})[:40]},
		{"batch length beyond the data", func() []byte {
			b := buildBatch(simpleRecords("l", 3), batchOpts{FirstTimestamp: now})
			binary.BigEndian.PutUint32(b[8:], uint32(len(b)))
			return b
		}()},
		{"empty records", []byte{}},
	}
	for _, tc := range bad {
		before := rawEndOffset(t, rc, topic, 0)
		resp := roundTrip(rc, produceReq(topic, 0, -1, tc.batch), 9, kmsg.NewPtrProduceResponse())
		c := resp.Topics[0].Partitions[0].ErrorCode
		if c == 0 {
			t.Errorf("Produce v9 with a bad batch (%s): accepted (error 0), want CORRUPT_MESSAGE (2) or INVALID_RECORD (87)", tc.name)
		} else {
			t.Logf("bad batch (%s): error %d", tc.name, c)
		}
		if e := rawEndOffset(t, rc, topic, 0); e != before {
			t.Errorf("bad batch (%s) moved the end offset from %d to %d", tc.name, before, e)
		}
	}

	// Two batches in one partition's records: Kafka (v3+) takes exactly
	// one. Accepting both is tolerable only if both get their own offsets
	// (checked by the fetch below).
	{
		before := rawEndOffset(t, rc, topic, 0)
		two := append(buildBatch(simpleRecords("two-a", 2), batchOpts{FirstTimestamp: now}),
			buildBatch(simpleRecords("two-b", 2), batchOpts{FirstTimestamp: now})...)
		resp := roundTrip(rc, produceReq(topic, 0, -1, two), 9, kmsg.NewPtrProduceResponse())
		c := resp.Topics[0].Partitions[0].ErrorCode
		after := rawEndOffset(t, rc, topic, 0)
		switch {
		case c != 0 && after != before:
			t.Errorf("two batches in one produce: error %d but the end offset moved %d -> %d", c, before, after)
		case c == 0 && after != before+4:
			t.Errorf("two 2-record batches in one produce: accepted, end offset %d -> %d, want +4 (or INVALID_RECORD)", before, after)
		case c == 0:
			t.Logf("two batches in one produce: accepted (Kafka answers INVALID_RECORD)")
		default:
			t.Logf("two batches in one produce: error %d", c)
		}
	}

	// Finally, fetch everything back: only the good batches are there, and
	// they decode.
	end := rawEndOffset(t, rc, topic, 0)
	freq := kmsg.NewPtrFetchRequest()
	freq.MaxWaitMillis, freq.MaxBytes, freq.MinBytes = 100, 1<<20, 1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	freq.Topics = append(freq.Topics, ft)
	fresp := roundTrip(rc, freq, 12, kmsg.NewPtrFetchResponse())
	fpr := fresp.Topics[0].Partitions[0]
	if fpr.ErrorCode != 0 || fpr.HighWatermark != end {
		t.Fatalf("Fetch v12: error %d high watermark %d, want 0 and %d", fpr.ErrorCode, fpr.HighWatermark, end)
	}
	var got int64
	for b := fpr.RecordBatches; len(b) > 0; {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatalf("fetched batch at byte %d does not decode: %v", len(fpr.RecordBatches)-len(b), err)
		}
		if rb.FirstOffset != got {
			t.Errorf("fetched batch base offset %d, want %d", rb.FirstOffset, got)
		}
		got += int64(rb.LastOffsetDelta) + 1
		b = b[12+int(rb.Length):]
	}
	if got != end {
		t.Errorf("fetched batches cover %d offsets, want %d", got, end)
	}
}

// TestRawPipelinedProduceOrder sends produce requests back to back on one
// connection without waiting for answers. Kafka handles a connection's
// requests one at a time, in order, so the records must land in send
// order (kafka-go's default acks=0 Writer and any non-idempotent producer
// with several requests in flight rely on it).
func TestRawPipelinedProduceOrder(t *testing.T) {
	n := startNode(t)
	for _, acks := range []int16{0, 1, -1} {
		t.Run(fmt.Sprintf("acks=%d", acks), func(t *testing.T) {
			rc := dialRaw(t, n.KafkaAddr())
			topic := fmt.Sprintf("pipelined-acks%d", -acks+1)
			rawCreateTopic(t, rc, topic, 1)
			const reqs = 50
			var corrs []int32
			var buf []byte
			for i := 0; i < reqs; i++ {
				batch := buildBatch([]testRecord{{Value: []byte(fmt.Sprintf("%03d", i))}}, batchOpts{FirstTimestamp: time.Now().UnixMilli()})
				req := produceReq(topic, 0, acks, batch)
				req.SetVersion(9)
				rc.corr++
				corrs = append(corrs, rc.corr)
				// AppendRequest writes the size at dst[0:4], so each frame
				// gets its own buffer.
				buf = append(buf, rc.fmt.AppendRequest(nil, req, rc.corr)...)
			}
			rc.writeRaw(buf) // all 50 in one write
			if acks != 0 {
				var offsets []int64
				inOrder := true
				for i, corr := range corrs {
					resp := kmsg.NewPtrProduceResponse()
					rc.recv(corr, resp, 9)
					p := resp.Topics[0].Partitions[0]
					if p.ErrorCode != 0 {
						t.Fatalf("pipelined produce %d: error %d", i, p.ErrorCode)
					}
					offsets = append(offsets, p.BaseOffset)
					inOrder = inOrder && p.BaseOffset == int64(i)
				}
				if !inOrder {
					t.Errorf("acks=%d: %d produce requests pipelined on one connection got base offsets %v, want 0..%d in request order",
						acks, reqs, offsets, reqs-1)
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for rawEndOffset(t, rc, topic, 0) < reqs && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			got := consumeUntil(t, n.KafkaAddr(), topic, atStart(1), reqs, 10*time.Second)
			var order []string
			for _, r := range got[0] {
				order = append(order, string(r.Value))
			}
			for i, v := range order {
				if v != fmt.Sprintf("%03d", i) {
					t.Errorf("acks=%d: %d requests pipelined on one connection landed out of order: %v", acks, reqs, order)
					break
				}
			}
		})
	}
}

// TestRawIdempotentSequences drives the idempotent producer checks by hand:
// duplicates inside the 5-batch window are answered with their original
// offset, gaps are OUT_OF_ORDER_SEQUENCE_NUMBER, a stale epoch is
// INVALID_PRODUCER_EPOCH, and a bumped epoch starting at sequence 0 is
// accepted (KIP-360: franz-go bumps the epoch locally after a sequence
// error and expects the broker to take it, as Kafka does).
func TestRawIdempotentSequences(t *testing.T) {
	n := startNode(t)
	rc := dialRaw(t, n.KafkaAddr())
	const topic = "idem"
	rawCreateTopic(t, rc, topic, 1)
	ipr := roundTrip(rc, kmsg.NewPtrInitProducerIDRequest(), 4, kmsg.NewPtrInitProducerIDResponse())
	if ipr.ErrorCode != 0 {
		t.Fatalf("InitProducerId v4: error %d", ipr.ErrorCode)
	}
	pid, epoch := ipr.ProducerID, ipr.ProducerEpoch
	now := time.Now().UnixMilli()
	send := func(what string, e int16, seq int32, nrec int) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		b := buildBatch(simpleRecords(fmt.Sprintf("e%d-s%d", e, seq), nrec), batchOpts{FirstTimestamp: now, Idempotent: &idempotence{pid, e, seq}})
		resp := roundTrip(rc, produceReq(topic, 0, -1, b), 9, kmsg.NewPtrProduceResponse())
		p := resp.Topics[0].Partitions[0]
		msg := ""
		if p.ErrorMessage != nil {
			msg = *p.ErrorMessage
		}
		t.Logf("%s (producer %d epoch %d seq %d, %d records): error %d %q base offset %d", what, pid, e, seq, nrec, p.ErrorCode, msg, p.BaseOffset)
		return p
	}
	expect := func(p kmsg.ProduceResponseTopicPartition, what string, code int16, base int64) {
		t.Helper()
		if p.ErrorCode != code || (code == 0 && p.BaseOffset != base) {
			t.Errorf("%s: error %d base offset %d, want error %d base offset %d", what, p.ErrorCode, p.BaseOffset, code, base)
		}
	}
	// Seven batches of 2: sequences 0,2,...,12, offsets 0..13.
	for i := 0; i < 7; i++ {
		expect(send("in order", epoch, int32(2*i), 2), fmt.Sprintf("batch %d in order", i), 0, int64(2*i))
	}
	// A retry of the last batch, and of one three back, inside the window.
	expect(send("retry of the last batch", epoch, 12, 2), "retry of the last batch (seq 12)", 0, 12)
	expect(send("retry inside the window", epoch, 6, 2), "retry of seq 6 (4th from last)", 0, 6)
	if e := rawEndOffset(t, rc, topic, 0); e != 14 {
		t.Errorf("after retries the end offset is %d, want 14: a duplicate was appended", e)
	}
	expect(send("gap", epoch, 20, 1), "sequence 20 after 13", kerr45, 0)
	if e := rawEndOffset(t, rc, topic, 0); e != 14 {
		t.Errorf("a rejected gap moved the end offset to %d", e)
	}
	// KIP-360 epoch bump done by the client: epoch+1 from sequence 0.
	bumped := send("bumped epoch from sequence 0", epoch+1, 0, 2)
	expect(bumped, "epoch+1 starting at sequence 0 (Kafka accepts it for an idempotent producer)", 0, 14)
	if bumped.ErrorCode == 0 {
		expect(send("bumped epoch continues", epoch+1, 2, 2), "epoch+1 sequence 2", 0, 16)
		expect(send("stale epoch", epoch, 14, 1), "the old epoch after a bump", kerr47, 0)
	}
	// A bumped epoch must start at 0 (Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER).
	before := rawEndOffset(t, rc, topic, 0)
	if p := send("bumped epoch not at 0", epoch+5, 7, 1); p.ErrorCode == 0 {
		t.Errorf("epoch+5 starting at sequence 7: accepted at %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", p.BaseOffset)
	}
	if e := rawEndOffset(t, rc, topic, 0); e != before {
		t.Errorf("a rejected batch moved the end offset from %d to %d", before, e)
	}
}

const (
	kerr45 = 45 // OUT_OF_ORDER_SEQUENCE_NUMBER
	kerr47 = 47 // INVALID_PRODUCER_EPOCH
)

// TestRawAcks0CloseInOrder: an acks=0 Produce that is refused closes the
// connection only after the requests before it: a valid acks=0 Produce
// pipelined just before it is appended every time, and a Metadata request
// before both is answered, then the connection closes.
func TestRawAcks0CloseInOrder(t *testing.T) {
	n := startNode(t)
	const topic = "acks0-order"
	createTopic(t, newAdmin(t, n.KafkaAddr()), topic, 1, nil)
	check := dialRaw(t, n.KafkaAddr())
	now := time.Now().UnixMilli()
	for i := range 20 {
		before := rawEndOffset(t, check, topic, 0)
		rc := dialRaw(t, n.KafkaAddr())
		meta := kmsg.NewPtrMetadataRequest()
		corr := rc.send(meta, 9)
		rc.send(produceReq(topic, 0, 0, buildBatch(simpleRecords("ok", 1), batchOpts{FirstTimestamp: now})), 9)
		// The refused request carries a valid partition too: it is
		// appended, as Kafka appends the valid partitions of a request.
		refused := produceReq(topic, 7, 0, buildBatch(simpleRecords("no", 1), batchOpts{FirstTimestamp: now})) // no partition 7
		valid := produceReq(topic, 0, 0, buildBatch(simpleRecords("also", 1), batchOpts{FirstTimestamp: now}))
		refused.Topics[0].Partitions = append(refused.Topics[0].Partitions, valid.Topics[0].Partitions[0])
		rc.send(refused, 9)
		// Read already, but after the close: never appended.
		rc.send(produceReq(topic, 0, 0, buildBatch(simpleRecords("after", 1), batchOpts{FirstTimestamp: now})), 9)
		rc.recv(corr, kmsg.NewPtrMetadataResponse(), 9)
		rc.expectClosed("an acks=0 Produce to a partition that does not exist", 5*time.Second)
		for deadline := time.Now().Add(5 * time.Second); rawEndOffset(t, check, topic, 0) != before+2; {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the valid acks=0 partitions before and in the refused request were not appended (end %d, want %d)", i, rawEndOffset(t, check, topic, 0), before+2)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if end := rawEndOffset(t, check, topic, 0); end != 40 {
		t.Fatalf("end offset %d after 20 rounds, want 40: a request read after the refused one was appended", end)
	}
	if v := metricValue(t, n.AdminAddr(), "brokerd_produce_records_total"); v != 40 {
		t.Fatalf("brokerd_produce_records_total = %v, want 40 (the valid partitions of refused requests count)", v)
	}
}
