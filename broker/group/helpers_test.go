package group

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeClock is a Clock moved by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

// counterIDs hands out member ids prefix-1, prefix-2, ...
func counterIDs() func(string) string {
	n := 0
	return func(prefix string) string {
		n++
		return fmt.Sprintf("%s-%d", prefix, n)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newTestCoordinator returns an active coordinator on a fake clock.
func newTestCoordinator(t testing.TB, tweak ...func(*Config)) (*Coordinator, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	cfg := Config{Clock: clk, NewMemberID: counterIDs(), Logger: quietLogger()}
	for _, f := range tweak {
		f(&cfg)
	}
	c := New(cfg)
	c.Activate(nil)
	return c, clk
}

// consumerMeta is consumer-protocol metadata subscribing to topics.
func consumerMeta(topics ...string) []byte {
	md := kmsg.NewConsumerMemberMetadata()
	md.Version = 1
	md.Topics = topics
	return md.AppendTo(nil)
}

// joinReq is a v4+ JoinGroup for a dynamic consumer with the range
// protocol.
func joinReq(group, memberID string) JoinRequest {
	return JoinRequest{
		Group:                group,
		MemberID:             memberID,
		ClientID:             "client",
		SessionTimeout:       10 * time.Second,
		RebalanceTimeout:     30 * time.Second,
		ProtocolType:         "consumer",
		Protocols:            []Protocol{{Name: "range", Metadata: consumerMeta("t")}},
		RequireKnownMemberID: true,
	}
}

// now returns the result on ch if there is one already.
func now[T any](ch <-chan T) (T, bool) {
	select {
	case r := <-ch:
		return r, true
	default:
		var zero T
		return zero, false
	}
}

// mustNow returns the result that must already be on ch.
func mustNow[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	r, ok := now(ch)
	if !ok {
		t.Fatalf("%s: no answer yet, want one at once", what)
	}
	return r
}

// mustWait asserts ch has no answer yet.
func mustWait[T any](t testing.TB, ch <-chan T, what string) {
	t.Helper()
	if r, ok := now(ch); ok {
		t.Fatalf("%s: answered %+v, want it to wait", what, r)
	}
}

func wantErr(t testing.TB, what string, got, want *kerr.Error) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error %v, want %v", what, got, want)
	}
}

// joinNew does the KIP-394 dance (MEMBER_ID_REQUIRED, then join with the
// id) and returns the id and the channel of the second join.
func joinNew(t testing.TB, c *Coordinator, req JoinRequest) (string, <-chan JoinResult) {
	t.Helper()
	r := mustNow(t, c.Join(req), "first join")
	wantErr(t, "first join", r.Err, kerr.MemberIDRequired)
	req.MemberID = r.MemberID
	return r.MemberID, c.Join(req)
}

// syncAll has the leader send plan and every other member sync, and
// returns each member's assignment.
func syncAll(t testing.TB, c *Coordinator, group string, gen int32, leader string, others []string, plan map[string]string) map[string]string {
	t.Helper()
	var chs = map[string]<-chan SyncResult{}
	for _, id := range others {
		chs[id] = c.Sync(SyncRequest{Group: group, Generation: gen, MemberID: id})
	}
	var as []Assignment
	for id, a := range plan {
		as = append(as, Assignment{MemberID: id, Assignment: []byte(a)})
	}
	chs[leader] = c.Sync(SyncRequest{Group: group, Generation: gen, MemberID: leader, Assignments: as})
	out := map[string]string{}
	for id, ch := range chs {
		r := mustNow(t, ch, "sync of "+id)
		wantErr(t, "sync of "+id, r.Err, nil)
		out[id] = string(r.Assignment)
	}
	return out
}

// withOffsets and noOffsets tell ValidateCommit whether a group has
// committed offsets.
func withOffsets() bool { return true }
func noOffsets() bool   { return false }
