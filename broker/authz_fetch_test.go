package broker

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore/acl"
	"github.com/brokerd/brokerd/topic"
)

// TestFetchSessionReauthorizes: a fetch session opened while Read was
// allowed stops serving the topic once Read is revoked, whether the
// incremental fetch names the topic or not, and answers it once per
// partition with TOPIC_AUTHORIZATION_FAILED (Kafka re-authorizes every
// partition of the session on every fetch).
func TestFetchSessionReauthorizes(t *testing.T) {
	b := authzBroker(t)
	grantACL(t, b, topicACL("t", "User:bob", acl.OpRead))
	if c := produceAs(t, b, "User:admin", "t", "secret"); c != 0 {
		t.Fatalf("produce: %d", c)
	}
	r0 := callAs[*kmsg.FetchResponse](t, b, "User:bob", fetchReq(0, 0, "t"), 12)
	if n, _ := fetchedFrom(r0, "t"); n == 0 || r0.SessionID == 0 {
		t.Fatalf("initial fetch: %d bytes, session %d", n, r0.SessionID)
	}
	revokeAllACLs(t, b)
	denied := []int16{kerr.TopicAuthorizationFailed.Code}
	r1 := callAs[*kmsg.FetchResponse](t, b, "User:bob", fetchReq(r0.SessionID, 1), 12)
	if n, codes := fetchedFrom(r1, "t"); n > 0 || !slices.Equal(codes, denied) {
		t.Errorf("incremental fetch naming nothing after revoke: %d bytes of t, codes %v; want none and %v", n, codes, denied)
	}
	r2 := callAs[*kmsg.FetchResponse](t, b, "User:bob", fetchReq(r0.SessionID, 2, "t"), 12)
	if n, codes := fetchedFrom(r2, "t"); n > 0 || !slices.Equal(codes, denied) {
		t.Errorf("incremental fetch naming t after revoke: %d bytes of t, codes %v; want none and %v", n, codes, denied)
	}
	// Read granted again: the same session serves it again.
	grantACL(t, b, topicACL("t", "User:bob", acl.OpRead))
	r3 := callAs[*kmsg.FetchResponse](t, b, "User:bob", fetchReq(r0.SessionID, 3), 12)
	if n, codes := fetchedFrom(r3, "t"); n == 0 || !slices.Equal(codes, []int16{0}) {
		t.Errorf("incremental fetch after Read is granted again: %d bytes, codes %v", n, codes)
	}
}

// TestFetchDeniedOncePerPartition: a sessionless fetch of an allowed and
// a refused topic answers the refused one once, and reads the other.
func TestFetchDeniedOncePerPartition(t *testing.T) {
	b := authzBroker(t)
	grantACL(t, b, topicACL("ok", "User:bob", acl.OpRead))
	for _, tp := range []string{"ok", "no"} {
		if err := b.store.CreateTopic(context.Background(), tp, topic.NewID(), 1, nil); err != nil {
			t.Fatal(err)
		}
		if c := produceAs(t, b, "User:admin", tp, "v"); c != 0 {
			t.Fatalf("produce %s: %d", tp, c)
		}
	}
	r := callAs[*kmsg.FetchResponse](t, b, "User:bob", fetchReq(0, -1, "ok", "no"), 12)
	if n, codes := fetchedFrom(r, "ok"); n == 0 || !slices.Equal(codes, []int16{0}) {
		t.Errorf("allowed topic: %d bytes, codes %v", n, codes)
	}
	if n, codes := fetchedFrom(r, "no"); n > 0 || !slices.Equal(codes, []int16{kerr.TopicAuthorizationFailed.Code}) {
		t.Errorf("refused topic: %d bytes, codes %v", n, codes)
	}
}
