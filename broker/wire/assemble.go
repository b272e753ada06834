package wire

import (
	"context"
	"fmt"
)

// assemblyReserve is the part of the in-flight budget kept for joining a
// frame received in chunks into one buffer (kmsg decodes from contiguous
// bytes): for the moment of the copy the frame is held twice. One
// assembly runs at a time, within this reserve, so joining never waits for
// the budget (two frames that each held their chunks while waiting for
// room to join them would wait on each other forever), and memory stays
// within MaxInFlightBytes.
func assemblyReserve(cfg Config) int64 {
	if int64(cfg.MaxRequestBytes) <= receiveChunk {
		return 0 // no frame is received in chunks
	}
	return min(int64(cfg.MaxRequestBytes), cfg.MaxInFlightBytes/2)
}

// assemble joins a frame's chunks, one assembly at a time.
func (s *Server) assemble(ctx context.Context, chunks [][]byte, size int64) ([]byte, error) {
	select {
	case s.assembling <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting to assemble a frame of %d bytes: %w", size, ctx.Err())
	}
	defer func() { <-s.assembling }()
	frame := make([]byte, 0, size)
	for i, c := range chunks {
		frame = append(frame, c...)
		chunks[i] = nil
	}
	return frame, nil
}
