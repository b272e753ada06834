package wire

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// API keys the wire layer treats specially.
const (
	apiKeyProduce            int16 = 0
	apiKeyFetch              int16 = 1
	apiKeyControlledShutdown int16 = 7
	apiKeyApiVersions        int16 = 18
)

// RequestHeader is a decoded Kafka request header.
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	// ClientID is nil when the client sent a null client id (and for the
	// header v0 of ControlledShutdown v0, which has no client id).
	ClientID *string
}

// ParseRequestHeader decodes the request header at the start of frame (the
// bytes after the int32 size prefix) and returns it with the request body
// that follows.
//
// Header v1 is api_key int16, api_version int16, correlation_id int32 and a
// nullable int16-length client_id. Flexible request versions use header v2,
// which adds tagged fields after client_id; they are skipped. Whether a
// version is flexible is what kmsg says for that api key and version, so an
// unknown api key is an error (ErrUnknownAPIKey) with the fixed fields of hdr
// still filled in. ControlledShutdown v0 uses header v0, without client_id.
func ParseRequestHeader(frame []byte) (hdr RequestHeader, body []byte, err error) {
	hdr, body, _, err = parseHeader(frame)
	return hdr, body, err
}

// parseFixedHeader reads the fields every header version starts with.
func parseFixedHeader(frame []byte) (RequestHeader, error) {
	if len(frame) < minFrameSize {
		return RequestHeader{}, fmt.Errorf("header needs %d bytes, frame has %d: %w", minFrameSize, len(frame), ErrMalformedHeader)
	}
	return RequestHeader{
		APIKey:        int16(binary.BigEndian.Uint16(frame[0:])),
		APIVersion:    int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}, nil
}

// parseHeader is ParseRequestHeader that also returns the empty kmsg request
// for the header's key, with its version set, ready to decode the body.
func parseHeader(frame []byte) (RequestHeader, []byte, kmsg.Request, error) {
	hdr, err := parseFixedHeader(frame)
	if err != nil {
		return hdr, nil, nil, err
	}
	msg := kmsg.RequestForKey(hdr.APIKey)
	if msg == nil {
		return hdr, nil, nil, fmt.Errorf("api key %d: %w", hdr.APIKey, ErrUnknownAPIKey)
	}
	hdr, body, err := parseHeaderRest(frame, hdr, msg)
	if err != nil {
		return hdr, nil, nil, err
	}
	return hdr, body, msg, nil
}

// parseHeaderRest reads what follows the fixed fields: the client id, and
// the tagged fields if msg is flexible. It sets msg's version to the
// header's and returns hdr with ClientID filled in, and the body.
func parseHeaderRest(frame []byte, hdr RequestHeader, msg kmsg.Request) (RequestHeader, []byte, error) {
	msg.SetVersion(hdr.APIVersion)
	rest := frame[minFrameSize:]
	if hdr.APIKey == apiKeyControlledShutdown && hdr.APIVersion == 0 {
		return hdr, rest, nil
	}
	var err error
	hdr.ClientID, rest, err = readClientID(rest)
	if err != nil {
		return hdr, nil, err
	}
	if msg.IsFlexible() {
		rest, err = skipTaggedFields(rest)
		if err != nil {
			return hdr, nil, err
		}
	}
	return hdr, rest, nil
}

// readClientID reads a nullable string with an int16 length (-1 is null).
func readClientID(b []byte) (*string, []byte, error) {
	if len(b) < 2 {
		return nil, nil, fmt.Errorf("client id length: %w", ErrMalformedHeader)
	}
	n := int(int16(binary.BigEndian.Uint16(b)))
	b = b[2:]
	switch {
	case n == -1:
		return nil, b, nil
	case n < -1:
		return nil, nil, fmt.Errorf("client id length %d: %w", n, ErrMalformedHeader)
	case n > len(b):
		return nil, nil, fmt.Errorf("client id length %d exceeds the %d bytes left: %w", n, len(b), ErrMalformedHeader)
	}
	id := string(b[:n])
	return &id, b[n:], nil
}

// skipTaggedFields skips a tagged-field section: a uvarint count, then per
// field a uvarint tag, a uvarint size and that many bytes. Every field takes
// at least two bytes, so the loop ends within len(b)/2 rounds whatever the
// count says.
func skipTaggedFields(b []byte) ([]byte, error) {
	count, b, err := readUvarint32(b)
	if err != nil {
		return nil, fmt.Errorf("tagged field count: %w", err)
	}
	for i := uint32(0); i < count; i++ {
		var tag, size uint32
		if tag, b, err = readUvarint32(b); err != nil {
			return nil, fmt.Errorf("tagged field %d of %d: tag: %w", i, count, err)
		}
		if size, b, err = readUvarint32(b); err != nil {
			return nil, fmt.Errorf("tagged field %d (tag %d): size: %w", i, tag, err)
		}
		if uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("tagged field %d (tag %d): size %d exceeds the %d bytes left: %w", i, tag, size, len(b), ErrMalformedHeader)
		}
		b = b[size:]
	}
	return b, nil
}

// readUvarint32 reads an unsigned varint that must fit in 32 bits.
func readUvarint32(b []byte) (uint32, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > math.MaxUint32 {
		return 0, nil, fmt.Errorf("bad uvarint: %w", ErrMalformedHeader)
	}
	return uint32(v), b[n:], nil
}
