package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// readLoop reads frames until the connection ends, queueing a slot for each
// request in read order. It returns why it stopped.
func (c *conn) readLoop() error {
	for {
		// A token per request in flight: reading pauses at the limit.
		select {
		case c.tokens <- struct{}{}:
		case <-c.stopCh:
			return errStopped
		case <-c.ctx.Done():
			return fmt.Errorf("waiting to read: %w", c.ctx.Err())
		}
		if err := c.awaitFrame(); err != nil {
			return err
		}
		if err := c.readFrame(); err != nil {
			return err
		}
	}
}

// awaitFrame waits for the first byte of the next frame under the idle
// timeout, then starts the frame's read deadline. It returns io.EOF if the
// client closed the connection between frames.
func (c *conn) awaitFrame() error {
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return errStopped
	}
	c.awaiting = true
	deadline, _ := c.idleDeadline()
	err := c.nc.SetReadDeadline(deadline)
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("set read deadline: %w", err)
	}

	for {
		_, err := c.br.Peek(1)
		if err == nil {
			break
		}
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		if !isTimeout(err) {
			return fmt.Errorf("waiting for a request: %w", err)
		}
		c.mu.Lock()
		if c.stopping {
			c.mu.Unlock()
			return errStopped
		}
		next, busy := c.idleDeadline()
		if !busy {
			c.mu.Unlock()
			return fmt.Errorf("no request for %s: %w", c.srv.cfg.IdleTimeout, errIdle)
		}
		err = c.nc.SetReadDeadline(next)
		c.mu.Unlock()
		if err != nil {
			return fmt.Errorf("set read deadline: %w", err)
		}
	}

	c.mu.Lock()
	c.awaiting = false
	c.frameDeadline = time.Now().Add(c.srv.cfg.ReadTimeout)
	err = c.nc.SetReadDeadline(c.frameDeadline)
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("set read deadline: %w", err)
	}
	return nil
}

// idleDeadline returns when the connection becomes idle, and whether that
// is still ahead. A connection with requests in flight is never idle (the
// reader holds one token for the frame it awaits).
func (c *conn) idleDeadline() (time.Time, bool) {
	now := time.Now()
	idle := c.srv.cfg.IdleTimeout
	if len(c.tokens) > 1 {
		return now.Add(idle), true
	}
	d := time.Unix(0, c.lastActive.Load()).Add(idle)
	return d, d.After(now)
}

// readFrame reads one frame, checking its size against the caps and
// charging it to the in-flight budget as it arrives (receive), then hands
// it to dispatch. A non-Produce frame is charged what decoding it may
// allocate only once it has arrived whole, for as long as the decode runs
// (dispatch keeps what the request then holds): a client that declares a
// frame and sends nothing holds only its declared bytes, never a worst
// case of them.
func (c *conn) readFrame() error {
	size, key, err := c.readSize()
	if err != nil {
		return err
	}
	frame, charge, err := c.receive(size)
	if err != nil {
		return err
	}
	// Clamped so that the frame's whole charge fits in the budget.
	if extra := min(chargeFor(key, size)-int64(size), c.srv.budget.capacity-charge); extra > 0 {
		got, err := c.acquire(extra)
		if err != nil {
			c.srv.budget.release(charge)
			return err
		}
		charge += got
	}
	c.touch()
	return c.dispatch(frame, charge)
}

// receiveChunk: a frame up to this size is charged whole before it is
// read; a larger one (only Produce may be larger) a chunk at a time, as
// its bytes arrive, so a client that declares 100 MiB and trickles holds
// only what it has sent.
const receiveChunk = 1 << 20

// receive reads a frame of size bytes, charging it to the budget, and
// returns it with the charge. While the budget is less than half used, a
// large frame is charged whole and read straight into its buffer: chunks
// and the copy that joins them cost about a tenth more CPU per byte
// produced, and are only worth it when room is short.
func (c *conn) receive(size int32) ([]byte, int64, error) {
	whole := size <= receiveChunk
	var charge int64
	if !whole && c.srv.budget.tryAcquire(int64(size), c.srv.budget.capacity/2) {
		whole, charge = true, int64(size)
	}
	if whole {
		if charge == 0 {
			var err error
			if charge, err = c.acquire(int64(size)); err != nil {
				return nil, 0, err
			}
		}
		frame := make([]byte, size)
		if _, err := io.ReadFull(c.br, frame); err != nil {
			c.srv.budget.release(charge)
			return nil, 0, c.frameReadError(size, err)
		}
		return frame, charge, nil
	}
	var chunks [][]byte
	var partial int64
	fail := func(err error) ([]byte, int64, error) {
		c.srv.budget.release(charge)
		c.srv.partial.release(partial)
		return nil, 0, err
	}
	for left := int64(size); left > 0; {
		n := min(left, receiveChunk)
		// A frame larger than a whole budget proceeds alone: its charges
		// stop at that budget's capacity.
		p, err := c.srv.partial.acquire(c.ctx, min(n, c.srv.partial.capacity-partial))
		partial += p
		if err != nil {
			return fail(err)
		}
		// Only the first chunk's wait moves the read deadline: a frame
		// that holds chunks and cannot get more must still arrive in
		// time, so that stalled frames cannot hold the room for good.
		var got int64
		if len(chunks) == 0 {
			got, err = c.acquire(min(n, c.srv.budget.capacity-charge))
		} else {
			got, err = c.srv.budget.acquire(c.ctx, min(n, c.srv.budget.capacity-charge))
		}
		charge += got
		if err != nil {
			return fail(err)
		}
		chunk := make([]byte, n)
		if _, err := io.ReadFull(c.br, chunk); err != nil {
			return fail(c.frameReadError(size, err))
		}
		chunks = append(chunks, chunk)
		left -= n
	}
	c.srv.partial.release(partial)
	partial = 0
	frame, err := c.srv.assemble(c.ctx, chunks, int64(size))
	if err != nil {
		return fail(err)
	}
	return frame, charge, nil
}

// acquire charges n bytes to the budget for this connection's reader.
// Time spent waiting is the server's doing, not the client's: the frame's
// read deadline moves by as much.
func (c *conn) acquire(n int64) (int64, error) {
	if n <= 0 {
		return 0, nil
	}
	waitStart := time.Now()
	charge, err := c.srv.budget.acquire(c.ctx, n)
	if err != nil {
		return 0, err
	}
	if waited := time.Since(waitStart); waited > time.Millisecond {
		c.frameDeadline = c.frameDeadline.Add(waited)
		if err := c.nc.SetReadDeadline(c.frameDeadline); err != nil {
			c.srv.budget.release(charge)
			return 0, fmt.Errorf("set read deadline: %w", err)
		}
	}
	return charge, nil
}

// readSize reads a frame's size prefix and peeks (without consuming) its api
// key, then checks the size against the caps: at least a header, at most
// MaxOtherBytes, except Produce up to MaxRequestBytes. A size above
// MaxRequestBytes is refused before the key is even read.
func (c *conn) readSize() (int32, int16, error) {
	var b [4]byte
	if _, err := io.ReadFull(c.br, b[:]); err != nil {
		return 0, 0, c.frameReadError(0, err)
	}
	size := int32(binary.BigEndian.Uint32(b[:]))
	cfg := &c.srv.cfg
	switch {
	case size < minFrameSize:
		return 0, 0, fmt.Errorf("frame size %d below the %d-byte minimum: %w", size, minFrameSize, ErrFrameSize)
	case size > cfg.MaxRequestBytes:
		return 0, 0, fmt.Errorf("frame size %d above socket.request.max.bytes %d: %w", size, cfg.MaxRequestBytes, ErrFrameSize)
	}
	kb, err := c.br.Peek(2)
	if err != nil {
		return 0, 0, c.frameReadError(size, err)
	}
	key := int16(binary.BigEndian.Uint16(kb))
	if size > cfg.MaxOtherBytes && key != apiKeyProduce {
		return 0, 0, fmt.Errorf("frame size %d of api key %d above the %d-byte cap for non-Produce requests: %w", size, key, cfg.MaxOtherBytes, ErrFrameSize)
	}
	return size, key, nil
}

// frameReadError describes a failure in the middle of a frame.
func (c *conn) frameReadError(size int32, err error) error {
	if isTimeout(err) {
		return fmt.Errorf("frame of %d bytes not complete after %s: %w", size, c.srv.cfg.ReadTimeout, errSlowFrame)
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading frame of %d bytes: %w", size, err)
}
