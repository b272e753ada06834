package raftstore

import (
	"encoding/binary"
	"hash/crc32"
)

// Control record types, the key of a transaction marker.
const (
	controlAbort  = 0
	controlCommit = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// controlBatch builds the one-record control batch (a COMMIT or ABORT
// marker) that ends a transaction on a partition. The FSM builds it, so it
// fills in the length and the CRC-32C itself. Base offset and leader epoch
// are rewritten on append.
func controlBatch(pid int64, epoch int16, commit bool, ts int64, coordinatorEpoch int32) []byte {
	typ := int16(controlAbort)
	if commit {
		typ = controlCommit
	}
	// Key: version int16 (0), type int16. Value: version int16 (0),
	// coordinator epoch int32.
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), uint16(typ))
	val := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), uint32(coordinatorEpoch))

	var rec []byte
	rec = append(rec, 0)                            // attributes
	rec = binary.AppendVarint(rec, 0)               // timestamp delta
	rec = binary.AppendVarint(rec, 0)               // offset delta
	rec = binary.AppendVarint(rec, int64(len(key))) // key
	rec = append(rec, key...)
	rec = binary.AppendVarint(rec, int64(len(val))) // value
	rec = append(rec, val...)
	rec = binary.AppendVarint(rec, 0) // headers

	b := make([]byte, 0, 61+len(rec)+5)
	b = binary.BigEndian.AppendUint64(b, 0)          // base offset
	b = binary.BigEndian.AppendUint32(b, 0)          // length, below
	b = binary.BigEndian.AppendUint32(b, 0)          // partition leader epoch
	b = append(b, 2)                                 // magic
	b = binary.BigEndian.AppendUint32(b, 0)          // crc, below
	b = binary.BigEndian.AppendUint16(b, 0x10|0x20)  // transactional | control
	b = binary.BigEndian.AppendUint32(b, 0)          // last offset delta
	b = binary.BigEndian.AppendUint64(b, uint64(ts)) // base timestamp
	b = binary.BigEndian.AppendUint64(b, uint64(ts)) // max timestamp
	b = binary.BigEndian.AppendUint64(b, uint64(pid))
	b = binary.BigEndian.AppendUint16(b, uint16(epoch))
	b = binary.BigEndian.AppendUint32(b, 0xffffffff) // base sequence -1
	b = binary.BigEndian.AppendUint32(b, 1)          // one record
	b = binary.AppendVarint(b, int64(len(rec)))
	b = append(b, rec...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}
