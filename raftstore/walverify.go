package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/hashicorp/raft-wal/segment"
)

// raft-wal checks the checksum of the last write of its tail segment only:
// it assumes the filesystem never changes bytes once written, so a bit
// flipped in an older entry is read back as it is, applied again on the
// next replay, and sent to followers. verifyWALSegment checks what
// raft-wal does not: every commit frame's checksum, over the bytes it
// covers, in a segment file. Facts of raft-wal's format (v0.4): a 32-byte
// file header; then frames, each an 8-byte header (type, three zero bytes,
// a little-endian uint32 that is the payload length, or for a commit frame
// the checksum) and the payload padded to 8 bytes; a commit frame's
// checksum is CRC-32C over every byte since the end of the previous commit
// frame (from the file's start for the first); an index frame (the seal)
// is covered by the commit after it.

// ErrWALDamaged reports a raft log segment whose bytes do not match their
// checksums.
var ErrWALDamaged = errors.New("raft log damaged")

const (
	walFileHeaderLen = 32
	walFrameEntry    = 1
	walFrameCommit   = 3
)

// verifyWALSegment checks the commits of the segment file at path. sealed
// says the metadata records it sealed: then every byte up to its seal must
// verify, and the seal must be there. For the tail, the last commit may
// be torn by a crash mid-write (raft-wal rewinds it), so only commits
// followed by another are judged.
func verifyWALSegment(path string, sealed bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("verify raft log segment: %w", err)
	}
	defer f.Close()
	damaged := func(format string, args ...any) error {
		return fmt.Errorf("%w: segment %s: %s", ErrWALDamaged, path, fmt.Sprintf(format, args...))
	}
	var (
		off        int64 = walFileHeaderLen
		crcStart   int64 // where the bytes the next commit covers begin
		lastBad    error // a commit that did not verify, judged by what follows
		seenSealed bool
		hdr        [walFrameHeaderLen]byte
		buf        []byte
	)
	for {
		n, err := f.ReadAt(hdr[:], off)
		if n < len(hdr) {
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("verify raft log segment %s: %w", path, err)
			}
			break
		}
		typ, word := hdr[0], binary.LittleEndian.Uint32(hdr[4:])
		if typ == 0 || typ > walFrameCommit || hdr[1]|hdr[2]|hdr[3] != 0 {
			// Zeros (the end), or a header a torn write left.
			break
		}
		if lastBad != nil {
			// A commit that did not verify, followed by more frames: not
			// the torn end of a crash, but bytes changed after the fact.
			return lastBad
		}
		if typ != walFrameCommit {
			if word > segment.MaxEntrySize {
				return damaged("frame at offset %d claims %d bytes", off, word)
			}
			if typ == walFrameIndex {
				seenSealed = true
			}
			off += walFrameHeaderLen + int64(word) + int64(walPad(word))
			continue
		}
		if need := int(off - crcStart); cap(buf) < need {
			buf = make([]byte, need)
		}
		buf = buf[:off-crcStart]
		if _, err := f.ReadAt(buf, crcStart); err != nil {
			return fmt.Errorf("verify raft log segment %s: %w", path, err)
		}
		if got := crc32.Checksum(buf, castagnoli); got != word {
			lastBad = damaged("the commit at offset %d covers bytes %d to %d, whose checksum is %08x, not %08x", off, crcStart, off, got, word)
			if sealed {
				return lastBad
			}
		}
		off += walFrameHeaderLen
		crcStart = off
		if seenSealed {
			break
		}
	}
	if sealed && (!seenSealed || crcStart != off) {
		return damaged("recorded sealed, but its frames end at offset %d without a committed seal", off)
	}
	return nil
}

func walPad(n uint32) uint32 { return (walFrameHeaderLen - n%walFrameHeaderLen) % walFrameHeaderLen }
