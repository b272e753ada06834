package raftstore

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/brokerd/brokerd/log"
)

// cmdType is the first byte of every raft command.
type cmdType byte

const (
	cmdProduce cmdType = iota + 1
	cmdCreateTopic
	cmdDeleteTopic
	cmdCreatePartitions
	cmdAlterConfigs
	cmdInitProducer
	cmdDeleteRecords
	cmdRetention
	cmdRegisterBroker
	cmdOffsetCommit
	cmdOffsetDelete
	cmdExpireOffsets
	cmdInitTxnProducer
	cmdAddPartitionsToTxn
	cmdAddOffsetsToTxn
	cmdTxnOffsetCommit
	cmdEndTxn
	cmdSetTopicDefaults
	cmdExpireProducers
	cmdSetClusterID
	cmdUnregisterBroker
	cmdProcDeploy
	cmdProcPause
	cmdProcDelete
	cmdProcStep
	cmdGroupMembers
	cmdScramAlter
	cmdCreateACLs
	cmdDeleteACLs
	cmdAlterQuotas
	// cmdProduceTxn is a produce command that carries the request's
	// transactional id. It is written only for a request with a
	// transactional id or a transactional batch: everything else stays
	// cmdProduce, which earlier versions read, so that a node upgraded
	// ahead of the others does not stop them at its first produce.
	cmdProduceTxn
)

func (t cmdType) String() string {
	switch t {
	case cmdProduce, cmdProduceTxn:
		return "produce"
	case cmdCreateTopic:
		return "create-topic"
	case cmdDeleteTopic:
		return "delete-topic"
	case cmdCreatePartitions:
		return "create-partitions"
	case cmdAlterConfigs:
		return "alter-configs"
	case cmdInitProducer:
		return "init-producer"
	case cmdDeleteRecords:
		return "delete-records"
	case cmdRetention:
		return "retention"
	case cmdRegisterBroker:
		return "register-broker"
	case cmdOffsetCommit:
		return "offset-commit"
	case cmdOffsetDelete:
		return "offset-delete"
	case cmdExpireOffsets:
		return "expire-offsets"
	case cmdInitTxnProducer:
		return "init-txn-producer"
	case cmdAddPartitionsToTxn:
		return "add-partitions-to-txn"
	case cmdAddOffsetsToTxn:
		return "add-offsets-to-txn"
	case cmdTxnOffsetCommit:
		return "txn-offset-commit"
	case cmdEndTxn:
		return "end-txn"
	case cmdSetTopicDefaults:
		return "set-topic-defaults"
	case cmdExpireProducers:
		return "expire-producers"
	case cmdSetClusterID:
		return "set-cluster-id"
	case cmdUnregisterBroker:
		return "unregister-broker"
	case cmdProcDeploy:
		return "processor-deploy"
	case cmdProcPause:
		return "processor-pause"
	case cmdProcDelete:
		return "processor-delete"
	case cmdProcStep:
		return "processor-step"
	case cmdGroupMembers:
		return "group-members"
	case cmdScramAlter:
		return "scram-alter"
	case cmdCreateACLs:
		return "create-acls"
	case cmdDeleteACLs:
		return "delete-acls"
	case cmdAlterQuotas:
		return "alter-quotas"
	}
	return fmt.Sprintf("cmd(%d)", byte(t))
}

// ProduceBatch is one record batch for one partition, as the client sent it.
type ProduceBatch struct {
	Topic     string
	Partition int32
	Data      []byte
}

// produceCmd appends batches. Now is the leader's clock in unix ms when it
// proposed the command; the FSM uses it for segment.ms rolling. TxnID is
// the Produce request's transactional id ("" for none): a transactional
// batch must come from the producer that id owns. Legacy marks a command
// an earlier version wrote, without the id: it applies as it did then.
type produceCmd struct {
	Now     int64
	TxnID   string
	Legacy  bool
	Batches []ProduceBatch
}

// maxTxnIDBytes bounds a produce command's transactional id (its length
// is encoded in two bytes).
const maxTxnIDBytes = 1<<16 - 1

// encodeProduce lays a produce command out in binary: the batch bytes are
// copied once and never base64'd.
//
//	cmdProduceTxn(1) now(8) txnIDLen(2) txnID batches
//	cmdProduce(1) now(8) batches   (Legacy)
func encodeProduce(c *produceCmd) []byte {
	out := make([]byte, 0, 1+8+2+len(c.TxnID)+batchesSize(c.Batches))
	if c.Legacy || c.TxnID == "" && !anyTransactional(c.Batches) {
		out = append(out, byte(cmdProduce))
		out = binary.BigEndian.AppendUint64(out, uint64(c.Now))
		return appendBatches(out, c.Batches)
	}
	out = append(out, byte(cmdProduceTxn))
	out = binary.BigEndian.AppendUint64(out, uint64(c.Now))
	out = binary.BigEndian.AppendUint16(out, uint16(len(c.TxnID)))
	out = append(out, c.TxnID...)
	return appendBatches(out, c.Batches)
}

// anyTransactional reports whether a batch is transactional (or cannot
// be read, which apply refuses under either command type).
func anyTransactional(bs []ProduceBatch) bool {
	for _, b := range bs {
		h, err := log.ParseBatchHeader(b.Data)
		if err != nil || h.Transactional() {
			return true
		}
	}
	return false
}

// batchesSize is the encoded size of a batch section.
func batchesSize(bs []ProduceBatch) int {
	n := 4
	for _, b := range bs {
		n += 2 + len(b.Topic) + 4 + 4 + len(b.Data)
	}
	return n
}

// appendBatches appends a batch section:
//
//	count(4) { topicLen(2) topic partition(4) dataLen(4) data }*
func appendBatches(out []byte, bs []ProduceBatch) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(bs)))
	for _, b := range bs {
		out = binary.BigEndian.AppendUint16(out, uint16(len(b.Topic)))
		out = append(out, b.Topic...)
		out = binary.BigEndian.AppendUint32(out, uint32(b.Partition))
		out = binary.BigEndian.AppendUint32(out, uint32(len(b.Data)))
		out = append(out, b.Data...)
	}
	return out
}

// decodeProduce parses a produce command. The batch data aliases buf.
func decodeProduce(buf []byte) (*produceCmd, error) {
	if len(buf) == 0 || cmdType(buf[0]) != cmdProduce && cmdType(buf[0]) != cmdProduceTxn {
		return nil, fmt.Errorf("%w: not a produce command", ErrInvalidCommand)
	}
	r := buf[1:]
	if len(r) < 8 {
		return nil, fmt.Errorf("%w: short produce command", ErrInvalidCommand)
	}
	c := &produceCmd{Now: int64(binary.BigEndian.Uint64(r)), Legacy: cmdType(buf[0]) == cmdProduce}
	r = r[8:]
	if !c.Legacy {
		if len(r) < 2 {
			return nil, fmt.Errorf("%w: short produce command", ErrInvalidCommand)
		}
		n := int(binary.BigEndian.Uint16(r))
		if len(r) < 2+n {
			return nil, fmt.Errorf("%w: truncated transactional id", ErrInvalidCommand)
		}
		c.TxnID, r = string(r[2:2+n]), r[2+n:]
	}
	var err error
	if c.Batches, err = readBatches(r); err != nil {
		return nil, err
	}
	return c, nil
}

// readBatches parses a batch section that ends r. The batch data aliases r.
func readBatches(r []byte) ([]ProduceBatch, error) {
	if len(r) < 4 {
		return nil, fmt.Errorf("%w: short batch section", ErrInvalidCommand)
	}
	count := binary.BigEndian.Uint32(r)
	r = r[4:]
	if uint64(count) > uint64(len(r))/10+1 {
		return nil, fmt.Errorf("%w: batch count %d too large", ErrInvalidCommand, count)
	}
	out := make([]ProduceBatch, 0, count)
	for i := uint32(0); i < count; i++ {
		if len(r) < 2 {
			return nil, fmt.Errorf("%w: truncated topic length", ErrInvalidCommand)
		}
		tl := int(binary.BigEndian.Uint16(r))
		r = r[2:]
		if len(r) < tl+8 {
			return nil, fmt.Errorf("%w: truncated topic", ErrInvalidCommand)
		}
		b := ProduceBatch{Topic: string(r[:tl])}
		r = r[tl:]
		b.Partition = int32(binary.BigEndian.Uint32(r))
		dl := binary.BigEndian.Uint32(r[4:])
		r = r[8:]
		if uint64(dl) > uint64(len(r)) {
			return nil, fmt.Errorf("%w: truncated batch data", ErrInvalidCommand)
		}
		b.Data = r[:dl:dl]
		r = r[dl:]
		out = append(out, b)
	}
	if len(r) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrInvalidCommand, len(r))
	}
	return out, nil
}

// Metadata commands are rare and small: JSON after the type byte.

type createTopicCmd struct {
	Name       string            `json:"name"`
	ID         [16]byte          `json:"id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

type deleteTopicCmd struct {
	Name string `json:"name"`
	// Now is the leader's clock when it proposed the deletion (ms); it
	// starts the name's quarantine (RecentlyDeleted).
	Now int64 `json:"now,omitempty"`
}

type createPartitionsCmd struct {
	Name  string `json:"name"`
	Count int32  `json:"count"`
}

// alterConfigsCmd replaces all overrides (Replace, AlterConfigs semantics) or
// sets and deletes single keys (IncrementalAlterConfigs semantics).
type alterConfigsCmd struct {
	Name    string            `json:"name"`
	Replace bool              `json:"replace,omitempty"`
	Set     map[string]string `json:"set,omitempty"`
	Delete  []string          `json:"delete,omitempty"`
}

type initProducerCmd struct {
	ProducerID    int64 `json:"producer_id"`
	ProducerEpoch int16 `json:"producer_epoch"`
	// Now is the leader's clock (ms): the producer's expiry clock starts
	// here.
	Now int64 `json:"now,omitempty"`
}

type deleteRecordsCmd struct {
	Now     int64               `json:"now"`
	Entries []DeleteRecordsSpec `json:"entries"`
}

// DeleteRecordsSpec asks to move a partition's log start offset up to Offset
// (-1 means the high watermark).
type DeleteRecordsSpec struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

type retentionCmd struct {
	Now int64 `json:"now"`
}

// BrokerInfo is a node's Kafka identity, replicated so every node can answer
// Metadata for the whole cluster.
type BrokerInfo struct {
	NodeID int32 `json:"node_id"`
	// Host and Port are the advertised address of the node's first
	// listener: all a node from before Listeners registers, and what such
	// a node reads of a newer one.
	Host string `json:"host"`
	Port int32  `json:"port"`
	Rack string `json:"rack,omitempty"`
	// Admin is the node's admin HTTP address, where other nodes forward
	// cluster administration to the leader.
	Admin string `json:"admin,omitempty"`
	// Listeners are the advertised address of each of the node's
	// listeners, by listener name (Kafka's endpoints). Empty for a node
	// from before they were registered.
	Listeners []Endpoint `json:"listeners,omitempty"`
	// Principal is who registered the node first, as the leader's admin
	// API authenticated it (its client certificate's principal): the
	// node id's later registrations must come from it, until the node is
	// removed. Empty with the authorizer off. Not part of Equal.
	Principal string `json:"principal,omitempty"`
}

// Endpoint is a listener's advertised address.
type Endpoint struct {
	Listener string `json:"listener"`
	Host     string `json:"host"`
	Port     int32  `json:"port"`
}

type registerBrokerCmd struct {
	Broker BrokerInfo `json:"broker"`
}

func encodeJSON(t cmdType, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s command: %w", t, err)
	}
	out := make([]byte, 0, 1+len(body))
	out = append(out, byte(t))
	return append(out, body...), nil
}

func decodeJSON(buf []byte, v any) error {
	if err := json.Unmarshal(buf[1:], v); err != nil {
		return fmt.Errorf("%w: decode %s: %v", ErrInvalidCommand, cmdType(buf[0]), err)
	}
	return nil
}
