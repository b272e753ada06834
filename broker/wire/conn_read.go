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
		if err := c.awaitSettled(); err != nil {
			return err
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
	err := c.nc.SetReadDeadline(c.authDeadlineFor(deadline))
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
		if err := c.checkAuthDeadline(time.Now()); err != nil {
			return err
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
		err = c.nc.SetReadDeadline(c.authDeadlineFor(next))
		c.mu.Unlock()
		if err != nil {
			return fmt.Errorf("set read deadline: %w", err)
		}
	}

	// A throttled connection reads its next frame only once the throttle
	// has passed; the frame waits in the socket meanwhile.
	if err := c.waitMuted(); err != nil {
		return err
	}
	c.mu.Lock()
	c.awaiting = false
	c.frameDeadline = c.authDeadlineFor(time.Now().Add(c.srv.cfg.ReadTimeout))
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

// readFrame reads one frame: its header, then its ticket (see admit), and
// only then its buffer and body. It hands the frame to dispatch. A small
// frame (one that may take the reserve) is first read whole into the
// connection's read buffer, so that it is charged only once all its bytes
// have arrived: a client cannot hold the reserve by sending headers.
func (c *conn) readFrame() error {
	if c.auth.preAuth() {
		return c.readPreAuth()
	}
	size, key, err := c.readSize()
	if err != nil {
		return err
	}
	if int64(size) <= c.srv.budget.smallMax && int(size) <= c.br.Size() {
		if _, err := c.br.Peek(int(size)); err != nil {
			return c.frameReadError(size, err)
		}
	}
	tk, err := c.admit(key, size)
	if err != nil {
		return err
	}
	frame := make([]byte, size)
	if _, err := io.ReadFull(c.br, frame); err != nil {
		tk.release()
		return c.frameReadError(size, err)
	}
	c.touch()
	return c.dispatch(frame, tk)
}

// admit waits for the frame's ticket (its size, in the frame pool), no
// later than the frame's read deadline: a frame that cannot be admitted
// by then closes the connection. Once admitted, the body gets what
// waiting took back, since waiting for budget is the server's doing, not
// the client's.
func (c *conn) admit(key int16, size int32) (ticket, error) {
	start := time.Now()
	tk, err := c.srv.budget.acquire(c.ctx, c.stopCh, c.src, int64(size), c.frameDeadline)
	if err != nil {
		if errors.Is(err, errNotAdmitted) {
			return tk, fmt.Errorf("frame of %d bytes, api key %d, from %s: %w", size, key, c.src.key, err)
		}
		return tk, err
	}
	if waited := time.Since(start); waited > time.Millisecond {
		c.frameDeadline = c.frameDeadline.Add(waited)
		if err := c.nc.SetReadDeadline(c.frameDeadline); err != nil {
			tk.release()
			return ticket{}, fmt.Errorf("set read deadline: %w", err)
		}
	}
	return tk, nil
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
		if err := c.checkAuthDeadline(time.Now()); err != nil {
			return err
		}
		return fmt.Errorf("frame of %d bytes not complete after %s: %w", size, c.srv.cfg.ReadTimeout, errSlowFrame)
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading frame of %d bytes: %w", size, err)
}
