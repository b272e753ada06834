package raftstore

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// checkStateFile refuses a state file (bbolt) shorter than its last
// committed transaction says it is. bbolt maps the file and reads the
// pages its meta names without checking them against the file's size, so
// a truncated file would crash the process with SIGBUS (its freelist
// page), at every start, or read zeros for the pages cut off. A missing
// or empty file is a new one; a file whose meta pages are both unreadable
// is left to bbolt, which refuses it itself.
func checkStateFile(path string) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("open state db: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat state db: %w", err)
	}
	if st.Size() == 0 {
		return nil
	}
	// Meta page 0 is at 0; its page size places meta page 1.
	m0, ok0 := readBoltMeta(f, 0)
	var m1 boltMeta
	var ok1 bool
	if ok0 {
		m1, ok1 = readBoltMeta(f, int64(m0.pageSize))
	} else {
		for _, ps := range []int64{4096, 8192, 16384, 65536} {
			if m1, ok1 = readBoltMeta(f, ps); ok1 && int64(m1.pageSize) == ps {
				break
			}
			ok1 = false
		}
	}
	m := m0
	switch {
	case ok0 && ok1:
		if m1.txid > m0.txid {
			m = m1
		}
	case ok1:
		m = m1
	case !ok0:
		return nil
	}
	if need := int64(m.pgid) * int64(m.pageSize); st.Size() < need {
		return fmt.Errorf("state db %s is %d bytes, but its last transaction (%d) uses %d pages of %d bytes (%d bytes): "+
			"the file was truncated outside brokerd, or by a disk or filesystem that lost synced writes. "+
			"In a cluster, move this node's data directory aside and restart it to rebuild from its peers",
			path, st.Size(), m.txid, m.pgid, m.pageSize, need)
	}
	return nil
}

type boltMeta struct {
	pageSize   uint32
	pgid, txid uint64
}

// readBoltMeta reads the bbolt meta page at off: a 16-byte page header,
// then magic, version, page size, flags (uint32 each), the root bucket
// (16 bytes), the freelist page, the high-water page id, the txid and an
// FNV-64a checksum of what precedes it, in the machine's byte order
// (little-endian on every platform brokerd builds for).
func readBoltMeta(r io.ReaderAt, off int64) (boltMeta, bool) {
	var b [16 + 64]byte
	if _, err := r.ReadAt(b[:], off); err != nil {
		return boltMeta{}, false
	}
	meta := b[16:]
	le := binary.LittleEndian
	if le.Uint32(meta[0:]) != 0xED0CDAED || le.Uint32(meta[4:]) != 2 {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	h.Write(meta[:56])
	if h.Sum64() != le.Uint64(meta[56:]) {
		return boltMeta{}, false
	}
	m := boltMeta{pageSize: le.Uint32(meta[8:]), pgid: le.Uint64(meta[40:]), txid: le.Uint64(meta[48:])}
	if m.pageSize < 1024 || m.pageSize&(m.pageSize-1) != 0 {
		return boltMeta{}, false
	}
	return m, true
}
