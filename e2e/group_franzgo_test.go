package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/internal/node"
)

// killableDialer dials the broker until it is killed; then it closes every
// connection it made and refuses new ones. A client behind it dies the way
// a crashed process does: no LeaveGroup, its heartbeats just stop.
type killableDialer struct {
	mu    sync.Mutex
	dead  bool
	conns []net.Conn
}

func (d *killableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return nil, errors.New("killed")
	}
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *killableDialer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead = true
	for _, c := range d.conns {
		c.Close()
	}
}

// consumption records who consumed which record.
type consumption struct {
	mu  sync.Mutex
	got map[int32]map[int64][]string // partition -> offset -> consumers
}

func newConsumption() *consumption { return &consumption{got: map[int32]map[int64][]string{}} }

func (c *consumption) add(who string, r *kgo.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.got[r.Partition] == nil {
		c.got[r.Partition] = map[int64][]string{}
	}
	c.got[r.Partition][r.Offset] = append(c.got[r.Partition][r.Offset], who)
}

// missing counts the offsets below ends that nobody consumed.
func (c *consumption) missing(ends map[int32]int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for p, end := range ends {
		for o := int64(0); o < end; o++ {
			if len(c.got[p][o]) == 0 {
				n++
			}
		}
	}
	return n
}

// groupMember runs a franz-go group consumer that commits what it has
// processed before it lets a rebalance proceed.
type groupMember struct {
	name string
	cl   *kgo.Client
	done chan struct{}
	mu   sync.Mutex
	errs []error // commit errors
}

func startGroupMember(t *testing.T, name string, cl *kgo.Client, seen *consumption) *groupMember {
	m := &groupMember{name: name, cl: cl, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		// Close waits for the rebalance it causes (leaving the group),
		// which BlockRebalanceOnPoll holds until allowed.
		defer cl.AllowRebalance()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			fs := cl.PollRecords(ctx, 500)
			cancel()
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) { seen.add(name, r) })
			if len(fs.Records()) > 0 {
				cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := cl.CommitUncommittedOffsets(cctx); err != nil {
					m.mu.Lock()
					m.errs = append(m.errs, err)
					m.mu.Unlock()
				}
				ccancel()
			}
			cl.AllowRebalance()
		}
	}()
	return m
}

// groupAssignment describes a group and decodes each member's consumer
// assignment.
func groupAssignment(t *testing.T, adm *kadm.Client, group string) (state string, members map[string][]int32) {
	t.Helper()
	dg, err := adm.DescribeGroups(testCtx(t, 10*time.Second), group)
	if err != nil {
		t.Fatalf("DescribeGroups %s: %v", group, err)
	}
	d := dg[group]
	if d.Err != nil {
		t.Fatalf("DescribeGroups %s: %v", group, d.Err)
	}
	members = map[string][]int32{}
	for _, m := range d.Members {
		ca, ok := m.Assigned.AsConsumer()
		if !ok {
			members[m.MemberID] = nil
			continue
		}
		for _, tp := range ca.Topics {
			members[m.MemberID] = append(members[m.MemberID], tp.Partitions...)
		}
	}
	return d.State, members
}

// produceN produces n records to each partition of topic.
func produceN(t *testing.T, addr, topic string, partitions int32, n int, tag string) {
	t.Helper()
	prod := newKgo(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer prod.Close()
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("%s-%d-%d", tag, p, i))})
		}
	}
	if err := prod.ProduceSync(testCtx(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", tag, err)
	}
}

// TestFranzGoGroupMemberDies runs three franz-go consumers in a group on a
// six-partition topic, kills one (its connections drop, no LeaveGroup),
// and checks that the survivors take over every partition once the dead
// member's session times out, that every record is consumed, and that the
// committed offsets reach the end of every partition. Eager (range) and
// cooperative (cooperative-sticky) assignors both.
func TestFranzGoGroupMemberDies(t *testing.T) {
	t.Parallel()
	n := startNode(t, fastGroups)
	addr := n.KafkaAddr()
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topic, group := "group-death-"+tc.name, "g-death-"+tc.name
			const partitions = 6
			adm := newAdmin(t, addr)
			createTopic(t, adm, topic, partitions, nil)
			produceN(t, addr, topic, partitions, 100, "before")

			seen := newConsumption()
			opts := func(extra ...kgo.Opt) []kgo.Opt {
				return append([]kgo.Opt{
					kgo.ConsumerGroup(group),
					kgo.ConsumeTopics(topic),
					kgo.Balancers(tc.balancer),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
					kgo.DisableAutoCommit(),
					kgo.BlockRebalanceOnPoll(),
					kgo.SessionTimeout(2 * time.Second),
					kgo.HeartbeatInterval(300 * time.Millisecond),
					kgo.RebalanceTimeout(15 * time.Second),
					kgo.FetchMaxWait(250 * time.Millisecond),
					kgo.WithLogger(kgoLogger{n.logs}),
				}, extra...)
			}
			var members []*groupMember
			for i := 0; i < 2; i++ {
				cl := newKgo(t, addr, opts()...)
				members = append(members, startGroupMember(t, fmt.Sprintf("survivor-%d", i), cl, seen))
			}
			victimCtx, killVictim := context.WithCancel(context.Background())
			defer killVictim()
			dialer := &killableDialer{}
			victimCl := newKgo(t, addr, opts(kgo.Dialer(dialer.dial), kgo.WithContext(victimCtx))...)
			victim := startGroupMember(t, "victim", victimCl, seen)

			// All three share the partitions and consume the first batch.
			waitFor(t, 30*time.Second, "three members sharing six partitions", func() (bool, string) {
				state, ms := groupAssignment(t, adm, group)
				return state == "Stable" && len(ms) == 3 && coversOnce(ms, partitions) && seen.missing(ends(partitions, 100)) == 0,
					fmt.Sprintf("state %s, assignment %v, %d of the first batch unconsumed", state, ms, seen.missing(ends(partitions, 100)))
			})

			killed := time.Now()
			dialer.kill()
			killVictim()
			<-victim.done

			produceN(t, addr, topic, partitions, 100, "after")
			want := ends(partitions, 200)
			waitFor(t, 40*time.Second, "survivors owning every partition and consuming everything", func() (bool, string) {
				state, ms := groupAssignment(t, adm, group)
				miss := seen.missing(want)
				return state == "Stable" && len(ms) == 2 && coversOnce(ms, partitions) && miss == 0,
					fmt.Sprintf("state %s, assignment %v, %d records unconsumed", state, ms, miss)
			})
			t.Logf("survivors took over %s after the kill", time.Since(killed).Round(100*time.Millisecond))
			waitFor(t, 20*time.Second, "committed offsets at the end of every partition", func() (bool, string) {
				offs, err := adm.FetchOffsets(testCtx(t, 10*time.Second), group)
				if err != nil {
					return false, err.Error()
				}
				got := map[int32]int64{}
				offs.Each(func(o kadm.OffsetResponse) { got[o.Partition] = o.At })
				for p, end := range want {
					if got[p] != end {
						return false, fmt.Sprintf("committed %v, want %v", got, want)
					}
				}
				return true, ""
			})

			seen.mu.Lock()
			dups := 0
			for _, offs := range seen.got {
				for _, who := range offs {
					survivors := 0
					for _, w := range who {
						if w != "victim" {
							survivors++
						}
					}
					if survivors > 1 {
						dups++
					}
				}
			}
			seen.mu.Unlock()
			for _, m := range members {
				m.mu.Lock()
				if len(m.errs) > 0 {
					t.Logf("%s: %d commits failed (retried later), first: %v", m.name, len(m.errs), m.errs[0])
				}
				m.mu.Unlock()
			}
			if dups > 0 {
				t.Logf("%d records were consumed by both survivors (at-least-once redelivery)", dups)
			}
			for _, m := range members {
				m.cl.CloseAllowingRebalance()
				<-m.done
			}
			state, ms := groupAssignment(t, adm, group)
			if state != "Empty" || len(ms) != 0 {
				t.Errorf("after every survivor closed: state %s, members %v; want Empty", state, ms)
			}
		})
	}
}

// TestFranzGoGroupStaticMember restarts a static member (group.instance.id)
// and checks that the other member sees no rebalance: the restarted one
// takes its old place and assignment.
func TestFranzGoGroupStaticMember(t *testing.T) {
	t.Parallel()
	n := startNode(t, fastGroups)
	addr := n.KafkaAddr()
	const topic, group, partitions = "static", "g-static", 4
	adm := newAdmin(t, addr)
	createTopic(t, adm, topic, partitions, nil)

	var mu sync.Mutex
	revoked := map[string]int{}
	assigned := map[string]int{}
	newMember := func(instance string) *kgo.Client {
		return newKgo(t, addr,
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.InstanceID(instance),
			kgo.Balancers(kgo.RangeBalancer()),
			kgo.SessionTimeout(20*time.Second),
			kgo.HeartbeatInterval(500*time.Millisecond),
			kgo.FetchMaxWait(250*time.Millisecond),
			kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
				mu.Lock()
				assigned[instance]++
				mu.Unlock()
			}),
			kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) {
				mu.Lock()
				revoked[instance]++
				mu.Unlock()
			}),
			kgo.WithLogger(kgoLogger{n.logs}),
		)
	}
	poll := func(ctx context.Context, cl *kgo.Client) {
		for ctx.Err() == nil {
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			if cl.PollFetches(pctx).IsClientClosed() {
				cancel()
				return
			}
			cancel()
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	a := newMember("static-a")
	go poll(ctx, a)
	b := newMember("static-b")
	bctx, stopB := context.WithCancel(ctx)
	go poll(bctx, b)

	var before map[string][]int32
	waitFor(t, 30*time.Second, "two static members sharing the partitions", func() (bool, string) {
		state, ms := groupAssignment(t, adm, group)
		before = ms
		return state == "Stable" && len(ms) == 2 && coversOnce(ms, partitions), fmt.Sprintf("state %s, assignment %v", state, ms)
	})
	mu.Lock()
	revokedA := revoked["static-a"]
	mu.Unlock()

	// b restarts: a static member's Close does not leave the group.
	stopB()
	b.Close()
	b2 := newMember("static-b")
	go poll(ctx, b2)
	waitFor(t, 20*time.Second, "the restarted static member back in its place", func() (bool, string) {
		mu.Lock()
		n := assigned["static-b"]
		mu.Unlock()
		state, ms := groupAssignment(t, adm, group)
		return n >= 2 && state == "Stable" && len(ms) == 2 && coversOnce(ms, partitions), fmt.Sprintf("state %s, assignment %v, b assigned %d times", state, ms, n)
	})
	_, after := groupAssignment(t, adm, group)
	mu.Lock()
	defer mu.Unlock()
	if revoked["static-a"] != revokedA {
		t.Errorf("member a saw a rebalance when static member b restarted (revoked %d times, %d before)", revoked["static-a"], revokedA)
	}
	if !sameAssignmentShape(before, after) {
		t.Errorf("assignment changed across the static restart: before %v, after %v", before, after)
	}
}

// TestFranzGoGroupAdmin lists, describes and deletes groups and offsets
// with kadm.
func TestFranzGoGroupAdmin(t *testing.T) {
	t.Parallel()
	n := startNode(t, fastGroups)
	addr := n.KafkaAddr()
	adm := newAdmin(t, addr)
	createTopic(t, adm, "admin-t", 2, nil)

	// Offsets committed without a group member (a group-less client).
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "admin-t", Partition: 0, At: 5, LeaderEpoch: -1, Metadata: "m"})
	os.Add(kadm.Offset{Topic: "admin-t", Partition: 1, At: 7, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(testCtx(t, 10*time.Second), "standalone", os)
	if err != nil || resp.Error() != nil {
		t.Fatalf("CommitOffsets: %v %v", err, resp.Error())
	}
	fetched, err := adm.FetchOffsets(testCtx(t, 10*time.Second), "standalone")
	if err != nil || fetched.Error() != nil {
		t.Fatalf("FetchOffsets: %v %v", err, fetched.Error())
	}
	if o, _ := fetched.Lookup("admin-t", 0); o.At != 5 || o.Metadata != "m" {
		t.Errorf("fetched %+v, want offset 5 with metadata m", o)
	}
	if o, _ := fetched.Lookup("admin-t", 1); o.At != 7 {
		t.Errorf("fetched %+v, want 7", o)
	}
	if none, err := adm.FetchOffsets(testCtx(t, 10*time.Second), "never-seen"); err != nil || len(none) != 0 {
		t.Errorf("FetchOffsets of an unknown group: %v %v, want nothing and no error", none, err)
	}

	listed, err := adm.ListGroups(testCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	if g, ok := listed["standalone"]; !ok || g.State != "Empty" {
		t.Errorf("ListGroups: %+v, want standalone Empty", listed)
	}

	dr, err := adm.DeleteOffsets(testCtx(t, 10*time.Second), "standalone", kadm.TopicsSet{"admin-t": {0: {}}})
	if err != nil || dr.Error() != nil {
		t.Fatalf("DeleteOffsets: %v %v", err, dr.Error())
	}
	fetched, _ = adm.FetchOffsets(testCtx(t, 10*time.Second), "standalone")
	if _, ok := fetched.Lookup("admin-t", 0); ok {
		t.Errorf("partition 0's offset is still there after OffsetDelete: %v", fetched)
	}
	del, err := adm.DeleteGroups(testCtx(t, 10*time.Second), "standalone", "never-seen")
	if err != nil {
		t.Fatalf("DeleteGroups: %v", err)
	}
	if del["standalone"].Err != nil || del["never-seen"].Err == nil {
		t.Errorf("DeleteGroups: %+v, want standalone deleted and never-seen GROUP_ID_NOT_FOUND", del)
	}
	listed, _ = adm.ListGroups(testCtx(t, 10*time.Second))
	if _, ok := listed["standalone"]; ok {
		t.Errorf("standalone still listed after DeleteGroups: %+v", listed)
	}

	// A transactional id is coordinated by the same node (the raft
	// leader).
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKeys = []string{"txn"}
	fc, err := req.RequestWith(testCtx(t, 10*time.Second), newKgo(t, addr))
	if err != nil || len(fc.Coordinators) != 1 || fc.Coordinators[0].ErrorCode != 0 || fc.Coordinators[0].NodeID != 1 {
		t.Errorf("FindCoordinator for a transactional id: %+v %v, want node 1", fc, err)
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s: %s", what, timeout, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// coversOnce reports whether the members' partitions are 0..n-1, each
// exactly once.
func coversOnce(ms map[string][]int32, n int32) bool {
	seen := map[int32]int{}
	for _, ps := range ms {
		for _, p := range ps {
			seen[p]++
		}
	}
	if len(seen) != int(n) {
		return false
	}
	for p := int32(0); p < n; p++ {
		if seen[p] != 1 {
			return false
		}
	}
	return true
}

// sameAssignmentShape compares two assignments ignoring member ids (a
// restarted static member has a new one).
func sameAssignmentShape(a, b map[string][]int32) bool {
	shape := func(m map[string][]int32) []string {
		var out []string
		for _, ps := range m {
			ps = append([]int32(nil), ps...)
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			out = append(out, fmt.Sprint(ps))
		}
		sort.Strings(out)
		return out
	}
	return fmt.Sprint(shape(a)) == fmt.Sprint(shape(b))
}

// fastGroups shortens the group timings of an in-process node so group
// tests do not wait out Kafka's defaults: a 200ms initial rebalance delay
// (3s by default) and session timeouts from 1s (6s). The subprocess tests
// and the CI scripts keep the defaults.
func fastGroups(c *node.Config) {
	c.GroupInitialRebalanceDelay = 200 * time.Millisecond
	c.GroupMinSessionTimeout = time.Second
}

// ends is n records in each of partitions partitions.
func ends(partitions int32, n int64) map[int32]int64 {
	m := map[int32]int64{}
	for p := int32(0); p < partitions; p++ {
		m[p] = n
	}
	return m
}
