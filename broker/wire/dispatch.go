package wire

import (
	"fmt"
	"log/slog"
	"time"

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
	if hdr.APIKey == apiKeyApiVersions && c.auth.preAuth() {
		if err := c.preAuthApiVersions(hdr, hdr.APIVersion >= minV && hdr.APIVersion <= maxV); err != nil {
			return err
		}
	}
	if hdr.APIVersion > maxV && hdr.APIKey == apiKeyApiVersions {
		c.answerUnsupportedApiVersions(frame, hdr, msg, minV, maxV)
		return nil
	}
	if hdr.APIVersion < minV || hdr.APIVersion > maxV {
		return fmt.Errorf("api key %d version %d outside %d-%d: %w", hdr.APIKey, hdr.APIVersion, minV, maxV, ErrUnsupportedVersion)
	}
	if saslAPI(hdr.APIKey) {
		return c.dispatchSASL(frame, hdr, msg)
	}
	if c.auth.expired(time.Now()) {
		// KIP-368: a session that ran out takes only re-authentication.
		return fmt.Errorf("api key %d after the SASL session expired at %s: %w", hdr.APIKey, c.auth.expires.Format(time.RFC3339Nano), errPreAuth)
	}

	hdr, body, room, err := planDecode(frame, hdr, msg, min(produceRoom(len(frame)), c.srv.decode.share))
	if err != nil {
		return fmt.Errorf("api key %d version %d client %s: %w", hdr.APIKey, hdr.APIVersion, clientIDString(hdr.ClientID), err)
	}
	// The frame is in memory: wait for its decode room (see charge.go for
	// why waiting here, holding the frame's ticket, cannot deadlock). An
	// unauthenticated client's ApiVersions (a small frame, read whole;
	// preauth.go) holds no shared budget.
	var dtk ticket
	if !c.auth.preAuth() {
		dtk, err = c.srv.decode.acquire(c.ctx, c.stopCh, c.dsrc, room, time.Now().Add(c.srv.cfg.ReadTimeout))
		if err != nil {
			return fmt.Errorf("api key %d version %d, frame of %d bytes: %w", hdr.APIKey, hdr.APIVersion, len(frame), err)
		}
	}
	if err := decodeBody(msg, body); err != nil {
		dtk.release()
		return fmt.Errorf("api key %d version %d client %s: %w", hdr.APIKey, hdr.APIVersion, clientIDString(hdr.ClientID), err)
	}
	// The decode is done: keep only what the request now holds.
	dtk.shrink(footprint(msg))

	req := &Request{Header: hdr, Msg: msg, RemoteAddr: c.remote, Listener: c.listener.Name, Principal: c.principal, Size: len(frame), order: newOrder(c.lastOrder, &c.stopped), sendFiles: c.rawConn != nil, mute: &c.mute}
	c.lastOrder = req.order.done
	s := newSlot(hdr, req, tk, dtk)
	c.lastDone = s.done
	handed = true
	c.queue <- s // never blocks: the reader holds a token for it
	go c.handle(s)
	return nil
}

// planDecode reads the rest of the header and returns the body and the
// room decoding it may take: for Produce what its pre-scan finds (which
// must stay within produceLimit), for anything else decodeAmplification
// times the frame.
func planDecode(frame []byte, hdr RequestHeader, msg kmsg.Request, produceLimit int64) (RequestHeader, []byte, int64, error) {
	hdr, body, err := parseHeaderRest(frame, hdr, msg)
	if err != nil {
		return hdr, nil, 0, err
	}
	if hdr.APIKey != apiKeyProduce {
		return hdr, body, otherDecodeRoom(len(frame)), nil
	}
	cost, err := checkProduceCostWithin(body, hdr.APIVersion, len(frame), produceLimit)
	if err != nil {
		return hdr, nil, 0, err
	}
	return hdr, body, min(cost+produceCostSlack, produceLimit), nil
}

// answerUnsupportedApiVersions queues the KIP-511 answer to an ApiVersions
// request above the supported version. Only the fixed header fields are
// needed; the client id is read if it can be, for the log.
func (c *conn) answerUnsupportedApiVersions(frame []byte, hdr RequestHeader, msg kmsg.Request, minV, maxV int16) {
	if full, _, err := parseHeaderRest(frame, hdr, msg); err == nil {
		hdr = full
	}
	c.logger().Debug("wire: ApiVersions above the supported version, answering UNSUPPORTED_VERSION",
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
