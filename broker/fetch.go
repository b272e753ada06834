package broker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/fetchsession"
	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/topic"
)

// fetchMaxBytes is Kafka's broker fetch.max.bytes default (55 MiB).
const fetchMaxBytes = 57671680

// maxFetchWait caps MaxWaitMillis so a client cannot park a request forever.
const maxFetchWait = 30 * time.Second

// fetch reads committed batches. It long-polls: when less than MinBytes is
// available it waits for the next applied raft batch (no sleeping), up to
// MaxWaitMillis. Fetch sessions (KIP-227) decide which partitions are read
// and which are answered (see package fetchsession).
func (b *Broker) fetch(ctx context.Context, req *wire.Request, r *kmsg.FetchRequest, a *authCtx) kmsg.Response {
	b.capFetchBytes(req, r)
	fc := b.sessions.NewContext(sessionRequest(r), time.Now())
	if code := fc.Err(); code != 0 {
		resp := kmsg.NewPtrFetchResponse()
		resp.ErrorCode = code
		return resp
	}
	parts := fc.Partitions()
	// v13+ names topics by ID: resolve them once per request (a topic
	// created or deleted during the long poll is seen by the next one).
	names := b.fetchTopicNames(r.Version, parts)
	// Every partition read is authorized, the session's included.
	denied, allDenied := fetchDenied(a, r, parts, names)
	wait := time.Duration(r.MaxWaitMillis) * time.Millisecond
	if wait > maxFetchWait {
		wait = maxFetchWait
	}
	// The reads go into pooled buffers, returned once the response that
	// holds them is written (or dropped); a read the long poll discards
	// returns its buffers at once. On a plain TCP connection, large reads
	// stay in the segment files and go out with sendfile.
	bufs := &fetchBufs{sendFiles: req != nil && req.SendsFiles()}
	answer := func(read []kmsg.FetchResponseTopicPartition) kmsg.Response {
		if resp := b.throttleFetch(req, fc, read, bufs); resp != nil {
			return resp
		}
		resp, files := b.fetchResponse(r, fc, parts, read, bufs)
		if req != nil {
			req.SetFetchFiles(files)
			req.AfterWrite(bufs.release)
		}
		return resp
	}
	reread := func() []kmsg.FetchResponseTopicPartition {
		bufs.release()
		read, _, _ := b.fetchOnce(r, parts, names, denied, bufs)
		return read
	}
	var deadline <-chan time.Time
	for {
		// Subscribe before reading, so an append between the read and the
		// wait still wakes us.
		changed := b.store.Changed()
		bufs.release()
		read, n, failed := b.fetchOnce(r, parts, names, denied, bufs)
		// A read that stopped at a segment's end with more past it is
		// answered at once, as Kafka's delayed fetch does when the fetch
		// offset lies in an older segment than the end; so is a fetch
		// with nothing it may read.
		if failed || allDenied || n >= int(r.MinBytes) || wait <= 0 || r.MinBytes <= 0 && n > 0 || bufs.segmentEnd {
			return answer(read)
		}
		// Nothing read is held while waiting (files are descriptors).
		bufs.release()
		if deadline == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-changed:
		case <-deadline:
			return answer(reread())
		case <-ctx.Done():
			return answer(reread())
		case <-wire.Draining(ctx):
			// Shutting down: answer now rather than hold shutdown up.
			return answer(reread())
		}
	}
}

// sessionRequest is the session view of a Fetch request: its partitions
// keyed by topic ID (v13+) or name, and what it forgets.
func sessionRequest(r *kmsg.FetchRequest) fetchsession.Request {
	sr := fetchsession.Request{Version: r.Version, SessionID: r.SessionID, Epoch: r.SessionEpoch}
	if r.Version < 7 {
		sr.Epoch = -1
	}
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			sr.Partitions = append(sr.Partitions, fetchsession.Partition{
				Key: sessionKey(r.Version, rt.Topic, rt.TopicID, rp.Partition),
				Params: fetchsession.Params{
					FetchOffset:        rp.FetchOffset,
					LogStartOffset:     rp.LogStartOffset,
					MaxBytes:           rp.PartitionMaxBytes,
					CurrentLeaderEpoch: rp.CurrentLeaderEpoch,
					LastFetchedEpoch:   rp.LastFetchedEpoch,
				},
			})
		}
	}
	for _, ft := range r.ForgottenTopics {
		for _, p := range ft.Partitions {
			sr.Forgotten = append(sr.Forgotten, sessionKey(r.Version, ft.Topic, ft.TopicID, p))
		}
	}
	return sr
}

func sessionKey(version int16, name string, id [16]byte, partition int32) fetchsession.Key {
	if version >= 13 {
		return fetchsession.Key{ID: id, Partition: partition}
	}
	return fetchsession.Key{Topic: name, Partition: partition}
}

// fetchResponse asks the session which partitions to answer and lays the
// response out, one topic entry per run of partitions of the same topic.
// files are the records of the response's partitions left in files, for
// Request.SetFetchFiles.
func (b *Broker) fetchResponse(r *kmsg.FetchRequest, fc *fetchsession.Context, parts []fetchsession.Partition, read []kmsg.FetchResponseTopicPartition, bufs *fetchBufs) (resp *kmsg.FetchResponse, files []wire.FileRecords) {
	results := make([]fetchsession.Result, len(read))
	for i, sp := range read {
		results[i] = fetchsession.Result{
			HighWatermark:        sp.HighWatermark,
			LogStartOffset:       sp.LogStartOffset,
			ErrorCode:            sp.ErrorCode,
			RecordBytes:          len(sp.RecordBatches) + bufs.fileLen(i),
			PreferredReadReplica: sp.PreferredReadReplica >= 0,
		}
	}
	keep, sid, code := fc.Finish(results, time.Now())
	resp = kmsg.NewPtrFetchResponse()
	resp.SessionID = sid
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	answered := 0
	for i, sp := range read {
		if !keep[i] {
			continue
		}
		k := parts[i].Key
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != k.Topic || resp.Topics[n-1].TopicID != k.ID {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = k.Topic, k.ID
			resp.Topics = append(resp.Topics, st)
		}
		st := &resp.Topics[len(resp.Topics)-1]
		st.Partitions = append(st.Partitions, sp)
		if fr := bufs.file(i); fr != nil {
			files = append(files, make([]wire.FileRecords, answered-len(files))...)
			files = append(files, wire.FileRecords{File: fr.File, Off: fr.Off, Len: fr.Len})
		}
		answered++
	}
	return resp, files
}

// fetchOnce reads what is committed now for each partition, in order. It
// reports how many record bytes it holds and whether any partition failed
// (a failure is answered at once, as Kafka does). A partition denied
// (fetchDenied) is answered TOPIC_AUTHORIZATION_FAILED and not read; it
// does not end the long poll of the others, as in Kafka.
func (b *Broker) fetchOnce(r *kmsg.FetchRequest, parts []fetchsession.Partition, names map[[16]byte]string, denied []bool, bufs *fetchBufs) ([]kmsg.FetchResponseTopicPartition, int, bool) {
	// The broker's fetch.max.bytes caps what a client may ask for: a read
	// allocates what it returns.
	maxBytes := min(int(r.MaxBytes), fetchMaxBytes)
	if maxBytes <= 0 {
		maxBytes = fetchMaxBytes
	}
	out := make([]kmsg.FetchResponseTopicPartition, len(parts))
	total, failed := 0, false
	epoch := b.store.LeaderEpoch()
	// KIP-392: a consumer (Fetch v11+) may read from any member, up to
	// what that member has applied; the leader points a consumer that
	// names its rack at an in-sync member in that rack.
	leader := b.store.IsLeader()
	serve := leader || r.Version >= 11 && r.ReplicaID < 0 && b.store.Serving()
	preferred := int32(-1)
	if leader && r.Version >= 11 && r.Rack != "" {
		preferred = b.preferredReadReplica(r.Rack)
	}
	for i, p := range parts {
		sp := &out[i]
		*sp = kmsg.NewFetchResponseTopicPartition()
		sp.Partition = p.Partition
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
		// Empty, not null: librdkafka rejects a null record set.
		sp.RecordBatches = []byte{}
		name, known := p.Topic, true
		if r.Version >= 13 {
			name, known = names[p.ID]
		}
		limit := int(p.MaxBytes)
		if rem := maxBytes - total; rem < limit {
			limit = rem
		}
		switch {
		case !known:
			sp.ErrorCode = kerr.UnknownTopicID.Code
		case denied != nil && denied[i]:
			sp.ErrorCode = topicDenied
			continue
		case topic.IsInternal(name):
			b.fetchInternal(sp, name, p, leader, epoch)
		case preferred >= 0:
			b.pointToReplica(sp, name, p, preferred, epoch)
		default:
			n, fr := b.fetchPartition(sp, name, p, r.IsolationLevel == 1, limit, total, maxBytes, serve, epoch, bufs)
			bufs.setFile(i, fr)
			total += n
		}
		if sp.ErrorCode != 0 {
			failed = true
		}
	}
	return out, total, failed
}

// fetchPartition reads one partition into sp and returns the record bytes
// it took, and the file they were left in when bufs sends files. total is
// what earlier partitions took of maxBytes. serve says whether this node
// may answer (the leader, or a member serving a follower fetch).
func (b *Broker) fetchPartition(sp *kmsg.FetchResponseTopicPartition, name string, p fetchsession.Partition, readCommitted bool, limit, total, maxBytes int, serve bool, epoch int32, bufs *fetchBufs) (int, *log.FileRange) {
	l, ok := b.store.Log(name, p.Partition)
	if code := leaderCheck(ok, serve, p.CurrentLeaderEpoch, epoch); code != 0 {
		sp.ErrorCode = code
		return 0, nil
	}
	end := l.EndOffset()
	lso := b.store.LastStableOffset(name, p.Partition)
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = end, lso, l.StartOffset()
	if readCommitted {
		// read_committed never sees past the last stable offset.
		end = lso
	}
	if p.FetchOffset >= end && p.FetchOffset <= sp.HighWatermark || limit <= 0 && total > 0 {
		return 0, nil
	}
	if p.FetchOffset > sp.HighWatermark && !b.store.IsLeader() {
		// A follower that has not applied that far yet: nothing to read
		// here yet, which is not out of range (the leader may have it).
		return 0, nil
	}
	if limit <= 0 {
		limit = 1
	}
	data, fr, err := bufs.read(l, p.FetchOffset, limit, end)
	if err != nil {
		sp.ErrorCode = errorCode(err)
		if !errors.Is(err, log.ErrOffsetOutOfRange) {
			b.logger.Warn("fetch read failed", "topic", name, "partition", p.Partition, "offset", p.FetchOffset, "err", err)
		}
		return 0, nil
	}
	n := len(data)
	if fr != nil {
		n = fr.Len
	}
	// KIP-74: only the first non-empty partition may overshoot the
	// response limit.
	if n == 0 || total > 0 && total+n > maxBytes {
		closeRange(fr)
		return 0, nil
	}
	if fr == nil {
		sp.RecordBatches = data
	}
	if readCommitted {
		for _, a := range b.store.AbortedTxns(name, p.Partition, p.FetchOffset, end) {
			sp.AbortedTransactions = append(sp.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
		}
	}
	return n, fr
}

// fetchInternal answers a partition of an internal topic: an empty log on
// the leader.
func (b *Broker) fetchInternal(sp *kmsg.FetchResponseTopicPartition, name string, p fetchsession.Partition, leader bool, epoch int32) {
	if code := leaderCheck(b.internalPartition(name, p.Partition), leader, p.CurrentLeaderEpoch, epoch); code != 0 {
		sp.ErrorCode = code
		return
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = 0, 0, 0
	if p.FetchOffset != 0 {
		sp.ErrorCode = kerr.OffsetOutOfRange.Code
	}
}

// truncateBatchesAt drops whole batches that start at or after end (the
// last stable offset): read_committed consumers get nothing undecided.
func truncateBatchesAt(data []byte, end int64) []byte {
	n := 0
	for n < len(data) {
		h, err := log.ParseBatchHeader(data[n:])
		if err != nil || h.BaseOffset >= end {
			break
		}
		n += int(h.Size())
	}
	return data[:n]
}

// pointToReplica answers a partition with the preferred read replica and
// the leader's offsets, and no records, as Kafka's leader does.
func (b *Broker) pointToReplica(sp *kmsg.FetchResponseTopicPartition, name string, p fetchsession.Partition, replica, epoch int32) {
	l, ok := b.store.Log(name, p.Partition)
	if code := leaderCheck(ok, true, p.CurrentLeaderEpoch, epoch); code != 0 {
		sp.ErrorCode = code
		return
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = l.EndOffset(), b.store.LastStableOffset(name, p.Partition), l.StartOffset()
	sp.PreferredReadReplica = replica
}

// preferredReadReplica is an in-sync member in the consumer's rack other
// than this leader, or -1 when the leader is in that rack or none is.
// Among several, the consumer's rack string picks one, so that one
// consumer keeps reading from the same member.
func (b *Broker) preferredReadReplica(rack string) int32 {
	self := b.store.Self()
	if self.Rack == rack {
		return -1
	}
	now := time.Now()
	var cands []int32
	for _, br := range b.brokers() {
		if br.Rack == rack && br.NodeID != self.NodeID && b.store.InSync(br.NodeID, b.cfg.ReplicaLag, now) {
			cands = append(cands, br.NodeID)
		}
	}
	if len(cands) == 0 {
		return -1
	}
	h := 0
	for _, c := range rack {
		h = h*31 + int(c)
	}
	if h < 0 {
		h = -h
	}
	return cands[h%len(cands)]
}
