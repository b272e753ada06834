package wire

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDecodeAmplification measures what kmsg allocates for the most
// wasteful frames known (a tagged field on every array element), checks
// it stays under the factor non-Produce frames are charged while decoding,
// and that footprint, the charge kept afterwards, tracks it.
func TestDecodeAmplification(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation figures")
	}
	md := kmsg.NewPtrMetadataRequest()
	for i := range 2000 {
		topic := kmsg.NewMetadataRequestTopic()
		topic.Topic = kmsg.StringPtr(fmt.Sprintf("some-topic-name-%d", i))
		md.Topics = append(md.Topics, topic)
	}
	tests := []struct {
		name  string
		frame []byte
	}{
		{"metadata v9, tag per topic", hostileMetadata(9, 20000)},
		{"metadata v12, tag per topic", hostileMetadata(12, 5000)},
		{"metadata v1, 2000 named topics", frameOf(1, nil, versioned(md, 1))},
		{"metadata v12, 2000 named topics", frameOf(1, nil, versioned(md, 12))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req *Request
			allocated := measureAlloc(func() {
				var err error
				if req, err = DecodeRequest(tt.frame); err != nil {
					t.Fatal(err)
				}
			})
			ratio := float64(allocated) / float64(len(tt.frame))
			fp := footprint(req.Msg)
			t.Logf("%d-byte frame: kmsg allocated %d bytes (%.1fx), footprint estimate %d", len(tt.frame), allocated, ratio, fp)
			if ratio > decodeAmplification {
				t.Errorf("%.1fx exceeds the %dx charged while decoding", ratio, decodeAmplification)
			}
			if fp < allocated/2 || fp > allocated*2 {
				t.Errorf("footprint %d too far from the %d bytes allocated", fp, allocated)
			}
		})
	}
}

func TestFootprintBasics(t *testing.T) {
	if got := footprint(nil); got != 0 {
		t.Fatalf("nil: %d", got)
	}
	var nilReq *kmsg.MetadataRequest
	if got := footprint(nilReq); got != 0 {
		t.Fatalf("typed nil: %d", got)
	}
	small := footprint(kmsg.NewPtrHeartbeatRequest())
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = string(make([]byte, 1000))
	if big := footprint(hb); big != small+1000 {
		t.Fatalf("a 1000-byte string adds %d", big-small)
	}
	p := produceRequest(9, 1, 1, 1<<20)
	if got := footprint(p); got > 4096 {
		t.Fatalf("produce records are in the frame, yet footprint is %d", got)
	}
}
