package wire

import (
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// dispatch decodes a frame, checks its api key and version against what is
// advertised, queues its slot and starts its handler. A request that must
// not be served returns an error, which closes the connection. tk is the
// frame's admission ticket; dispatch owns it from here on.
func (c *conn) dispatch(frame []byte, tk ticket) error {
	// Until the slot owns it, the ticket goes back on any way out, a
	// panic (recovered by the reader) included.
	handed := false
	defer func() {
		if !handed {
			tk.release()
		}
	}()
	hdr, err := parseFixedHeader(frame)
	if err != nil {
		return err
	}
	msg := kmsg.RequestForKey(hdr.APIKey)
	if msg == nil {
		return fmt.Errorf("api key %d version %d: %w", hdr.APIKey, hdr.APIVersion, ErrUnknownAPIKey)
	}
	minV, maxV, ok := c.srv.versions(hdr.APIKey)
	if !ok {
		return fmt.Errorf("api key %d version %d is not served: %w", hdr.APIKey, hdr.APIVersion, ErrUnknownAPIKey)
	}
	maxV = min(maxV, msg.MaxVersion())
	if hdr.APIVersion > maxV && hdr.APIKey == apiKeyApiVersions {
		c.answerUnsupportedApiVersions(frame, hdr, msg, minV, maxV)
		return nil
	}
	if hdr.APIVersion < minV || hdr.APIVersion > maxV {
		return fmt.Errorf("api key %d version %d outside %d-%d: %w", hdr.APIKey, hdr.APIVersion, minV, maxV, ErrUnsupportedVersion)
	}

	hdr, err = decodeFrame(frame, hdr, msg, produceDecodeRoom(len(frame), tk.bytes()))
	if err != nil {
		return fmt.Errorf("api key %d version %d client %s: %w", hdr.APIKey, hdr.APIVersion, clientIDString(hdr.ClientID), err)
	}
	// The decode is done: keep only what the request now holds.
	tk.shrink(int64(len(frame)) + footprint(msg))

	req := &Request{Header: hdr, Msg: msg, RemoteAddr: c.remote, Size: len(frame), order: newOrder(c.lastOrder, &c.stopped), sendFiles: c.rawConn != nil}
	c.lastOrder = req.order.done
	s := newSlot(hdr, req, tk)
	handed = true
	c.queue <- s // never blocks: the reader holds a token for it
	go c.handle(s)
	return nil
}

// decodeFrame reads the rest of the header and decodes the body into msg.
// A Produce body is first checked for what decoding it would allocate,
// which must stay within produceRoom bytes.
func decodeFrame(frame []byte, hdr RequestHeader, msg kmsg.Request, produceRoom int64) (RequestHeader, error) {
	hdr, body, err := parseHeaderRest(frame, hdr, msg)
	if err != nil {
		return hdr, err
	}
	if hdr.APIKey == apiKeyProduce {
		if err := checkProduceCostWithin(body, hdr.APIVersion, len(frame), produceRoom); err != nil {
			return hdr, err
		}
	}
	return hdr, decodeBody(msg, body)
}

// answerUnsupportedApiVersions queues the KIP-511 answer to an ApiVersions
// request above the supported version. Only the fixed header fields are
// needed; the client id is read if it can be, for the log.
func (c *conn) answerUnsupportedApiVersions(frame []byte, hdr RequestHeader, msg kmsg.Request, minV, maxV int16) {
	if full, _, err := parseHeaderRest(frame, hdr, msg); err == nil {
		hdr = full
	}
	c.log.Debug("wire: ApiVersions above the supported version, answering UNSUPPORTED_VERSION",
		"version", hdr.APIVersion, "max", maxV, "client_id", clientIDString(hdr.ClientID))
	c.queue <- newAnsweredSlot(hdr, unsupportedApiVersions(minV, maxV))
}

// clientIDString renders a nullable client id for logs.
func clientIDString(id *string) string {
	if id == nil {
		return "<null>"
	}
	return *id
}

// requestAttrs are the log attributes that identify a request.
func requestAttrs(hdr RequestHeader) []any {
	return []any{
		slog.Int("api_key", int(hdr.APIKey)),
		slog.Int("api_version", int(hdr.APIVersion)),
		slog.Int("correlation_id", int(hdr.CorrelationID)),
		slog.String("client_id", clientIDString(hdr.ClientID)),
	}
}
