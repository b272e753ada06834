package wire

import (
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request is one decoded request handed to a Handler.
type Request struct {
	Header RequestHeader
	// Msg is the decoded body; its version is the header's api version.
	// Byte fields (such as Produce records) alias the frame buffer, strings
	// are copies. It is valid until the Handler returns: the server then
	// drops it, and gives back the budget it was charged.
	Msg        kmsg.Request
	RemoteAddr net.Addr
	// Listener is the name of the listener the request came in on
	// (Kafka's listener name: PLAINTEXT, SSL, ...).
	Listener string
	// Principal is who the client authenticated as, Kafka-style
	// ("User:CN=alice,O=acme"; User:ANONYMOUS without authentication).
	Principal string
	// Size is the frame size: the value of the size prefix, that is the
	// header and body bytes without the prefix itself.
	Size int

	order *order // nil outside a connection
	// afterWrite runs once the response is written (see AfterWrite).
	afterWrite []func()
	// sendFiles: the connection takes sendfile (see SendsFiles); files
	// are the response's records left in files (SetFetchFiles).
	sendFiles bool
	files     []FileRecords
	// mute is the connection's mute clock; delayUntil (unix ns) holds the
	// response back (Throttle, mute.go).
	mute       *muteClock
	delayUntil int64
	// throttled and delayed are what Throttle was given (Throttled).
	throttled time.Duration
	delayed   bool
}

// AfterWrite asks for fn to run once the bytes the response to r
// references (record batches left in place rather than copied, files) are
// no longer needed, so that their buffers may be reused and their files
// closed: after the response has been handed to the connection, or once
// it is known never to be (the connection closed first, or encoding it
// failed). It runs exactly once, on the connection's writer or on the
// goroutine that drops the request last. A handler calls it before it
// returns.
func (r *Request) AfterWrite(fn func()) { r.afterWrite = append(r.afterWrite, fn) }

// FileBytes is the size of the records the response leaves in files
// (SetFetchFiles): bytes it sends that its records fields do not hold.
func (r *Request) FileBytes() int {
	n := 0
	for _, f := range r.files {
		n += f.Len
	}
	return n
}

// DecodeRequest decodes a whole frame (the bytes after the int32 size
// prefix): the header, then the body at the header's version. Versions kmsg
// cannot decode (negative, or above its maximum for the key) are rejected with
// ErrUnsupportedVersion. A Produce body whose decoding would allocate far
// more than the frame (see checkProduceCost) is rejected with
// ErrMalformedBody before kmsg sees it. It never panics, whatever the input.
func DecodeRequest(frame []byte) (*Request, error) {
	hdr, err := parseFixedHeader(frame)
	if err != nil {
		return nil, err
	}
	msg := kmsg.RequestForKey(hdr.APIKey)
	if msg == nil {
		return nil, fmt.Errorf("api key %d: %w", hdr.APIKey, ErrUnknownAPIKey)
	}
	if !kmsgSupports(msg, hdr.APIVersion) {
		return nil, fmt.Errorf("api key %d version %d (kmsg knows 0-%d): %w", hdr.APIKey, hdr.APIVersion, msg.MaxVersion(), ErrUnsupportedVersion)
	}
	hdr, body, _, err := planDecode(frame, hdr, msg, produceRoom(len(frame)))
	if err == nil {
		err = decodeBody(msg, body)
	}
	if err != nil {
		return nil, fmt.Errorf("api key %d version %d: %w", hdr.APIKey, hdr.APIVersion, err)
	}
	return &Request{Header: hdr, Msg: msg, Size: len(frame)}, nil
}

// kmsgSupports reports whether kmsg can decode msg at version.
func kmsgSupports(msg kmsg.Request, version int16) bool {
	return version >= 0 && version <= msg.MaxVersion()
}

// decodeBody decodes body into msg, whose version is already set. kmsg bounds
// every length by the bytes left and should not panic; a panic is turned into
// an error all the same, since the input is hostile.
func decodeBody(msg kmsg.Request, body []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v: %w", r, ErrMalformedBody)
		}
	}()
	if err := msg.ReadFrom(body); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformedBody, err)
	}
	return nil
}
