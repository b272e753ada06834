package wire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAppendResponse(t *testing.T) {
	metadata := func(v int16) kmsg.Response {
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(v)
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = 1, "localhost", 9092
		resp.Brokers = append(resp.Brokers, b)
		return resp
	}
	apiVersions := func(v int16) kmsg.Response {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(v)
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MaxVersion = 18, 4
		resp.ApiKeys = append(resp.ApiKeys, k)
		return resp
	}
	tests := []struct {
		name    string
		resp    kmsg.Response
		tagByte bool
	}{
		{"metadata v4 header v0", metadata(4), false},
		{"metadata v9 header v1", metadata(9), true},
		{"metadata v12 header v1", metadata(12), true},
		{"api versions v2 header v0", apiVersions(2), false},
		{"api versions v3 still header v0", apiVersions(3), false},
		{"api versions v4 still header v0", apiVersions(4), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("keep")
			out := AppendResponse(append([]byte(nil), prefix...), -3, tt.resp.Key(), tt.resp)
			if !bytes.HasPrefix(out, prefix) {
				t.Fatal("dst prefix lost")
			}
			frame := out[len(prefix):]
			if size := binary.BigEndian.Uint32(frame); int(size) != len(frame)-4 {
				t.Fatalf("size prefix %d, frame %d", size, len(frame)-4)
			}
			if corr := int32(binary.BigEndian.Uint32(frame[4:])); corr != -3 {
				t.Fatalf("correlation id %d", corr)
			}
			rest := frame[8:]
			if tt.tagByte {
				if rest[0] != 0 {
					t.Fatalf("tag byte %d", rest[0])
				}
				rest = rest[1:]
			}
			if want := tt.resp.AppendTo(nil); !bytes.Equal(rest, want) {
				t.Fatalf("body %x, want %x", rest, want)
			}
			// And a client reads it back.
			_, back, err := decodeResponse(frame[4:], tt.resp.Key(), tt.resp.GetVersion())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.AppendTo(nil), tt.resp.AppendTo(nil)) {
				t.Fatal("round trip differs")
			}
		})
	}
}

// TestUnsupportedApiVersionsBytes pins the KIP-511 answer byte for byte.
func TestUnsupportedApiVersionsBytes(t *testing.T) {
	got := AppendResponse(nil, 5, apiKeyApiVersions, unsupportedApiVersions(0, 4))
	want := []byte{
		0, 0, 0, 16, // size
		0, 0, 0, 5, // correlation id
		0, 35, // UNSUPPORTED_VERSION
		0, 0, 0, 1, // one api key
		0, 18, 0, 0, 0, 4, // ApiVersions 0-4
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
}
