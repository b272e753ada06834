package wire

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppendResponse appends a whole response frame to dst: the int32 size
// prefix, the response header and resp's body. The header is the correlation
// id, then, for flexible versions, an empty tagged-field section - except for
// ApiVersions (key 18), whose response header is always v0 so that a client
// can read it whatever version it asked for. resp's version must already be
// the request's version.
func AppendResponse(dst []byte, corrID int32, apiKey int16, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(corrID))
	if resp.IsFlexible() && apiKey != apiKeyApiVersions {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
