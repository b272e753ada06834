package wire

import (
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// maxDelayedCloses bounds the connections waiting out
// connection.failed.authentication.delay.ms: beyond it a failed
// connection is answered and closed at once. They wait in one queue,
// served by at most one goroutine, so failures cost no goroutine each.
const maxDelayedCloses = 4096

// delayedWriteTimeout bounds the write of the failure response: it is a
// few bytes, which a socket takes at once unless its client stopped
// reading.
const delayedWriteTimeout = 50 * time.Millisecond

// delayedCloser answers and closes connections after a delay.
type delayedCloser struct {
	mu      sync.Mutex
	queue   []delayedClose // in due order: the delay is the same for all
	running bool
	closed  bool
}

type delayedClose struct {
	nc    net.Conn
	frame []byte
	due   time.Time
}

// add queues nc to be sent frame (if any) and closed after delay; with
// the queue full, or the server closed, that happens now.
func (d *delayedCloser) add(nc net.Conn, frame []byte, delay time.Duration) {
	d.mu.Lock()
	if d.closed || delay <= 0 || len(d.queue) >= maxDelayedCloses {
		d.mu.Unlock()
		finishClose(nc, frame)
		return
	}
	d.queue = append(d.queue, delayedClose{nc: nc, frame: frame, due: time.Now().Add(delay)})
	start := !d.running
	d.running = true
	d.mu.Unlock()
	if start {
		go d.run()
	}
}

// run closes the queued connections as they fall due, and stops when the
// queue is empty.
func (d *delayedCloser) run() {
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			d.running = false
			d.queue = nil
			d.mu.Unlock()
			return
		}
		next := d.queue[0]
		wait := time.Until(next.due)
		if wait <= 0 {
			d.queue[0] = delayedClose{}
			d.queue = d.queue[1:]
		}
		d.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
			continue
		}
		finishClose(next.nc, next.frame)
	}
}

// closeAll closes everything queued now (server Close).
func (d *delayedCloser) closeAll() {
	d.mu.Lock()
	q := d.queue
	d.queue, d.closed = nil, true
	d.mu.Unlock()
	for _, c := range q {
		_ = c.nc.Close()
	}
}

// pending is how many connections wait to be closed.
func (d *delayedCloser) pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.queue)
}

// finishClose writes frame, briefly, and closes nc. A TLS connection's
// socket is closed under it: tls.Conn.Close would send close_notify with
// a deadline of its own, holding the one closer goroutine for a client
// that does not read.
func finishClose(nc net.Conn, frame []byte) {
	if len(frame) > 0 {
		_ = nc.SetWriteDeadline(time.Now().Add(delayedWriteTimeout))
		_, _ = nc.Write(frame)
	}
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	_ = nc.Close()
}
