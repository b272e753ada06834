package wire

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// flushThreshold: buffered responses are written once they reach this
	// size, even if more are ready.
	flushThreshold = 64 << 10
	// maxRetainedWriteBuf: a write buffer grown beyond this by a large
	// response is dropped after use rather than kept for the connection's
	// life.
	maxRetainedWriteBuf = 1 << 20
	// maxRetainedRefs: the same for the referenced records' list.
	maxRetainedRefs = 256
)

// writeLoop sends responses in request order. Ready responses are encoded
// into one buffer and written together; the buffer is flushed whenever the
// next response is not ready yet, so a lone response is never delayed. It
// returns when the reader has stopped and every slot is consumed, or when
// the connection is closed; serve then drains the slots left.
func (c *conn) writeLoop() {
	_, isTLS := c.nc.(*tls.Conn)
	w := responseWriter{nc: c.nc, rc: c.rawConn, coalesce: isTLS, timeout: c.srv.cfg.WriteTimeout, onWrite: c.touch}
	// Whatever is still buffered when the writer stops is never written.
	defer w.dropPending()
	for {
		var s *slot
		var ok bool
		select {
		case s, ok = <-c.queue:
		default:
			if err := w.flush(); err != nil {
				c.writeFailed(err)
				return
			}
			s, ok = <-c.queue
		}
		if !ok {
			if err := w.flush(); err != nil {
				c.writeFailed(err)
			}
			return
		}
		if !c.awaitSlot(s, &w) {
			s.unref()
			return
		}
		// A delayed response goes out alone after its delay: what is
		// before it is written now.
		hold := responseDelay(s)
		if hold != 0 {
			if err := w.flush(); err != nil {
				s.unref()
				c.writeFailed(err)
				return
			}
		}
		err := s.err
		if s.rawToken {
			err = w.appendRaw(s.raw)
		} else if err == nil && s.resp != nil {
			if err = c.encode(&w, s); err != nil {
				// The responses before it are whole: send them.
				_ = w.flush()
			} else if s.req != nil {
				// The writer owns them now; a slot dropped unwritten
				// runs them itself (slot.unref).
				w.afterWrite(s.req.afterWrite)
				s.req.afterWrite = nil
			}
		}
		s.unref()
		if hold != 0 && err == nil && !c.holdResponse(hold) {
			return
		}
		<-c.tokens
		if err != nil {
			if errors.Is(err, ErrCloseInOrder) {
				// What the requests before it answered goes out first.
				_ = w.flush()
			}
			c.writeFailed(err)
			return
		}
	}
}

// awaitSlot waits for s's handler, flushing what is buffered first if it is
// not done yet. It returns false if the connection closed meanwhile.
func (c *conn) awaitSlot(s *slot, w *responseWriter) bool {
	select {
	case <-s.done:
		return true
	default:
	}
	if err := w.flush(); err != nil {
		c.writeFailed(err)
		return false
	}
	select {
	case <-s.done:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// encode appends s's response to w. kmsg's encoders trust the struct they
// are given, so a malformed response from a handler can panic: that closes
// the connection, like a handler error.
func (c *conn) encode(w *responseWriter, s *slot) (err error) {
	start, refs, refBytes := len(w.buf), len(w.refs), w.refBytes
	defer func() {
		if r := recover(); r != nil {
			// A panic in the flush append calls finds the buffer written
			// and emptied already.
			w.buf, w.refs, w.refBytes = w.buf[:min(start, len(w.buf))], w.refs[:min(refs, len(w.refs))], min(refBytes, w.refBytes)
			c.logger().Error("wire: encoding a response panicked", append(requestAttrs(s.hdr), "panic", r, "stack", string(debug.Stack()))...)
			err = fmt.Errorf("encoding response to api key %d: %v", s.hdr.APIKey, r)
		}
	}()
	var files []FileRecords
	if s.req != nil {
		files = s.req.files
	}
	return w.append(s.hdr.CorrelationID, s.hdr.APIKey, s.resp, files)
}

// writeFailed closes the connection after a failed write or a handler
// error (which the handler already logged).
func (c *conn) writeFailed(err error) {
	if c.ctx.Err() == nil {
		c.logger().Debug("wire: closing connection", "reason", err)
	}
	c.abort(err)
}

// drainQueue drops the slots left when the writer stops early; it returns
// once the reader has stopped and closed the queue, so the connection must
// be closing.
func (c *conn) drainQueue() {
	for s := range c.queue {
		s.unref()
	}
}

// responseWriter batches encoded responses into one write. Fetch
// responses leave their large record batches where the handler read them
// (refs); a write sends the encoded bytes and those with writev.
type responseWriter struct {
	nc net.Conn
	// coalesce: nc encrypts each write into records of its own (TLS), so
	// the pieces of a response with referenced records go through bw
	// rather than one write each.
	coalesce bool
	bw       *bufio.Writer
	// rc takes sendfile for records left in files; nil: they are read.
	rc      syscall.RawConn
	timeout time.Duration
	onWrite func()
	buf     []byte
	// refs are record bytes that go out, in order, at offsets of buf.
	refs     []ref
	refBytes int
	vecs     net.Buffers
	// pending run after the next write: the bytes it sends are no longer
	// needed then.
	pending []func()
}

// dropPending runs what waits for a write that will not happen: the
// writer has stopped.
func (w *responseWriter) dropPending() {
	for _, fn := range w.pending {
		fn()
	}
	clear(w.pending)
	w.pending = w.pending[:0]
	clear(w.refs)
	w.refs, w.refBytes = w.refs[:0], 0
}

// afterWrite runs fns once what is buffered no longer references what the
// responses held: at once when nothing is referenced, else after the next
// write.
func (w *responseWriter) afterWrite(fns []func()) {
	if len(w.refs) == 0 {
		for _, fn := range fns {
			fn()
		}
		return
	}
	w.pending = append(w.pending, fns...)
}

// append encodes one response and writes what is buffered if it is full
// enough. files are a Fetch response's records left in files
// (Request.SetFetchFiles).
func (w *responseWriter) append(corrID int32, apiKey int16, resp kmsg.Response, files []FileRecords) error {
	start, refs, refBytes := len(w.buf), len(w.refs), w.refBytes
	f, fetch := resp.(*kmsg.FetchResponse)
	switch {
	case fetch && fetchEncodable(f):
		w.appendFetch(corrID, f, files)
	case fetch && len(files) > 0:
		if err := readFetchFiles(f, files); err != nil {
			return err
		}
		w.buf = AppendResponse(w.buf, corrID, apiKey, resp)
	default:
		w.buf = AppendResponse(w.buf, corrID, apiKey, resp)
	}
	if n := len(w.buf) - start - 4 + w.refBytes - refBytes; n > math.MaxInt32 {
		clear(w.refs[refs:])
		w.buf, w.refs, w.refBytes = w.buf[:start], w.refs[:refs], refBytes
		return fmt.Errorf("response to api key %d is %d bytes, more than a frame can hold", apiKey, n)
	}
	if len(w.buf)+w.refBytes >= flushThreshold {
		return w.flush()
	}
	return nil
}

// appendRaw appends a bare token with its int32 size prefix.
func (w *responseWriter) appendRaw(token []byte) error {
	w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(len(token)))
	w.buf = append(w.buf, token...)
	if len(w.buf)+w.refBytes >= flushThreshold {
		return w.flush()
	}
	return nil
}

// appendFetch appends a Fetch response frame, as AppendResponse would
// write it, with its large record batches referenced.
func (w *responseWriter) appendFetch(corrID int32, resp *kmsg.FetchResponse, files []FileRecords) {
	start, refBytes := len(w.buf), w.refBytes
	e := fetchEncoder{dst: append(w.buf, 0, 0, 0, 0), refs: w.refs, files: files}
	e.dst = binary.BigEndian.AppendUint32(e.dst, uint32(corrID))
	if resp.IsFlexible() {
		e.dst = append(e.dst, 0)
	}
	e.encodeFetch(resp)
	w.buf, w.refs, w.refBytes = e.dst, e.refs, refBytes+e.refBytes
	binary.BigEndian.PutUint32(w.buf[start:], uint32(len(w.buf)-start-4+e.refBytes))
}

// writeRefs writes the buffer with the records it references: writev for
// bytes in memory, sendfile for records left in files.
func (w *responseWriter) writeRefs() error {
	vecs := w.vecs[:0]
	var err error
	send := func() {
		if err != nil || len(vecs) == 0 {
			return
		}
		keep := vecs
		err = w.writeVecs(vecs)
		clear(keep) // drop the references to record bytes
		vecs = keep[:0]
	}
	at := 0
	for _, r := range w.refs {
		if r.at > at {
			vecs = append(vecs, w.buf[at:r.at])
		}
		at = r.at
		if r.file == nil {
			vecs = append(vecs, r.data)
			continue
		}
		if w.rc != nil {
			if send(); err == nil {
				err = sendFile(w.rc, r.file)
			}
			switch {
			case err == nil:
				sentFromFiles.Add(int64(r.file.Len))
				continue
			case errors.Is(err, errNoSendfile):
				// Written like any other connection's from now on.
				w.rc, err = nil, nil
			}
		}
		if err == nil {
			var data []byte
			data, err = r.file.read()
			vecs = append(vecs, data)
		}
		if err != nil {
			break
		}
	}
	if at < len(w.buf) {
		vecs = append(vecs, w.buf[at:])
	}
	send()
	clear(vecs[:cap(vecs)])
	w.vecs = vecs[:0]
	return err
}

// writeVecs writes vecs: with writev on a TCP connection, else gathered
// into writes of up to coalesceBytes (one TLS record each), large pieces
// written straight through.
func (w *responseWriter) writeVecs(vecs net.Buffers) error {
	if !w.coalesce {
		_, err := vecs.WriteTo(w.nc)
		return err
	}
	if w.bw == nil {
		w.bw = bufio.NewWriterSize(w.nc, coalesceBytes)
	}
	for _, b := range vecs {
		if _, err := w.bw.Write(b); err != nil {
			return err
		}
	}
	return w.bw.Flush()
}

// coalesceBytes is the largest TLS record's plaintext.
const coalesceBytes = 16 << 10

// flush writes what is buffered under the write timeout.
func (w *responseWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if err := w.nc.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	var err error
	if len(w.refs) == 0 {
		_, err = w.nc.Write(w.buf)
	} else {
		err = w.writeRefs()
		clear(w.refs)
		w.refs, w.refBytes = w.refs[:0], 0
		// Written, or failed and the connection closes: either way the
		// referenced bytes are no longer needed.
		for _, fn := range w.pending {
			fn()
		}
		clear(w.pending)
		w.pending = w.pending[:0]
	}
	if cap(w.buf) > maxRetainedWriteBuf {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	// Likewise the lists a response with thousands of partitions grew.
	if cap(w.refs) > maxRetainedRefs {
		w.refs = nil
	}
	if cap(w.vecs) > 2*maxRetainedRefs {
		w.vecs = nil
	}
	if err != nil {
		return fmt.Errorf("writing responses: %w", err)
	}
	w.onWrite()
	return nil
}
