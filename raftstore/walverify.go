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
// verify, and the seal must be there.
//
// The tail is judged more carefully, since a healthy tail may hold bytes
// past its end: the write a crash tore, and the remnants of such a write
// that a later, shorter one overwrote only in part (raft-wal rewinds to
// its last good commit and writes on from there). A walk that meets a
// frame it cannot read stops there, as raft-wal's recovery does, and a
// commit that fails is damage only if a later commit verifies: no remnant
// holds one whose checksum covers the bytes before it. So damage in the
// tail that leaves nothing readable after it (a changed frame header) is
// not caught here; raft-wal then ends the log early, and a member of a
// cluster gets the lost entries from the leader again.
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
		firstBad   error // the first commit that did not verify
		seenSealed bool
		hdr        [walFrameHeaderLen]byte
		buf        = make([]byte, 64<<10)
	)
	// sum is the CRC-32C of the file's bytes [from, to).
	sum := func(from, to int64) (uint32, error) {
		var c uint32
		for from < to {
			n := int(min(int64(len(buf)), to-from))
			if _, err := f.ReadAt(buf[:n], from); err != nil {
				return 0, err
			}
			c = crc32.Update(c, castagnoli, buf[:n])
			from += int64(n)
		}
		return c, nil
	}
	for {
		n, err := f.ReadAt(hdr[:], off)
		if n < len(hdr) {
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("verify raft log segment %s: %w", path, err)
			}
			break
		}
		typ, word := hdr[0], binary.LittleEndian.Uint32(hdr[4:])
		if typ == 0 || typ > walFrameCommit || hdr[1]|hdr[2]|hdr[3] != 0 ||
			(typ != walFrameCommit && word > segment.MaxEntrySize) {
			// Zeros (the end), or a frame no write made whole.
			break
		}
		if typ != walFrameCommit {
			if typ == walFrameIndex {
				seenSealed = true
			}
			off += walFrameHeaderLen + int64(word) + int64(walPad(word))
			continue
		}
		got, err := sum(crcStart, off)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("verify raft log segment %s: %w", path, err)
		}
		switch {
		case got != word && (sealed || firstBad == nil):
			bad := damaged("the commit at offset %d covers bytes %d to %d, whose checksum is %08x, not %08x", off, crcStart, off, got, word)
			if sealed {
				return bad
			}
			firstBad = bad
		case got == word && firstBad != nil:
			// A good commit after a bad one: the bad one was not the
			// torn end of the log but bytes changed after the fact.
			return firstBad
		}
		off += walFrameHeaderLen
		crcStart = off
		if seenSealed && sealed {
			break
		}
	}
	if sealed && (!seenSealed || crcStart != off) {
		return damaged("recorded sealed, but its frames end at offset %d without a committed seal", off)
	}
	return nil
}

func walPad(n uint32) uint32 { return (walFrameHeaderLen - n%walFrameHeaderLen) % walFrameHeaderLen }
