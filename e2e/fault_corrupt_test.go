package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Corruption faults: a follower is stopped (SIGTERM), one of its files is
// damaged, and it is started again. The requirement: the damage is
// detected, never served, and the node never leads while damaged. So the
// node must either refuse to start with a clear error (heal then wipes its
// data directory and it is rebuilt from its peers), or detect and repair
// the damage (truncate below it and catch up from the leader).
//
// While the fault lasts, a watcher notes every moment the damaged node
// leads while a flipped byte is still in its file. At heal, if it runs,
// every topic is read from it (through KIP-392 follower fetching: each
// node is in a rack of its own, and the reader names the damaged node's
// rack) with franz-go's CRC check, which names any batch served with a
// flipped byte. Any of these is reported (t.Errorf); then, if the damage
// is still there, heal wipes the node's data directory too, so the rest
// of a run goes on with a sound cluster.

// flipDamage is one flipped byte: at pos of path, orig became now.
type flipDamage struct {
	path      string
	pos       int64
	orig, now byte
}

// present tells whether the flipped byte is still in the file.
func (d flipDamage) present() bool {
	f, err := os.Open(d.path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, d.pos); err != nil {
		return false
	}
	return b[0] == d.now
}

// flipBit flips one bit, drawn with rng, of the byte at pos of path.
func flipBit(t testing.TB, path string, pos int64, rng *rand.Rand) flipDamage {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatalf("read %s at %d: %v", path, pos, err)
	}
	d := flipDamage{path: path, pos: pos, orig: b[0], now: b[0] ^ 1<<rng.IntN(8)}
	if _, err := f.WriteAt([]byte{d.now}, pos); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return d
}

// flipBatch is a record batch's place in a segment file.
type flipBatch struct{ start, end int64 }

// flipBatches frames the record batches of a segment file.
func flipBatches(data []byte) []flipBatch {
	var out []flipBatch
	for pos := int64(0); pos+61 <= int64(len(data)); {
		n := int64(binary.BigEndian.Uint32(data[pos+8:]))
		end := pos + 12 + n
		if n < 49 || end > int64(len(data)) {
			break
		}
		out = append(out, flipBatch{pos, end})
		pos = end
	}
	return out
}

// faultCorrupt damages a stopped follower's files and starts it again.
// target is "segment" (a partition's .log file), "state" (brokerd-state.db)
// or "wal" (a raft-wal segment); how is "flip" (bits in the file's written
// bytes; in a segment, inside a batch's CRC-covered bytes) or "truncate".
type faultCorrupt struct {
	target, how string

	victim     int
	flips      []flipDamage
	truncated  string // the truncated file
	truncSize  int64  // its size before
	refused    string // why the node did not start, if it did not
	stop       chan struct{}
	wg         sync.WaitGroup
	mu         sync.Mutex
	violations []string
}

func (f *faultCorrupt) name() string { return "corrupt-" + f.target + "-" + f.how }

// setupNode puts each node in a rack of its own, so that a reader can
// fetch from a chosen follower.
func (f *faultCorrupt) setupNode(t *testing.T, c *procCluster, i int) []string {
	return []string{"--override", fmt.Sprintf("broker.rack=rack-%d", i+1)}
}

// damaged tells whether the damage is still in the victim's files.
func (f *faultCorrupt) damaged() bool {
	for _, d := range f.flips {
		if d.present() {
			return true
		}
	}
	// A truncated raft-wal is whole again once raft has sent the lost
	// tail again (raft's own log matching); a shorter file is no sign.
	if f.truncated != "" && f.target != "wal" {
		if st, err := os.Stat(f.truncated); err == nil && st.Size() < f.truncSize {
			return true
		}
	}
	return false
}

func (f *faultCorrupt) inject(t *testing.T, c *procCluster, rng *rand.Rand) {
	t.Helper()
	f.victim, f.flips, f.truncated, f.refused, f.violations = faultFollower(t, c, rng), nil, "", "", nil
	bp := c.nodes[f.victim]
	if code := bp.term(30 * time.Second); code != 0 {
		t.Fatalf("%s: node %d exited %d after SIGTERM", f.name(), f.victim+1, code)
	}
	what := f.damage(t, bp.dataDir, rng)
	t.Logf("%s: node %d stopped; %s", f.name(), f.victim+1, what)
	bp.launch()
	// Ready, or gone: either is an answer.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if !bp.running() {
			f.refused = faultLastError(bp.logTail(64 << 10))
			t.Logf("%s: node %d refused to start (%v): %s", f.name(), f.victim+1, bp.waitErr, f.refused)
			// A crash is no clear error, and a supervisor would restart
			// it into the same crash.
			if strings.HasPrefix(f.refused, "fatal error:") || strings.HasPrefix(f.refused, "panic:") {
				t.Errorf("%s: node %d crashed at start instead of refusing its damaged data: %s", f.name(), f.victim+1, f.refused)
			}
			return
		}
		if code, _ := faultReadyz(bp.adminAddr()); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: node %d neither ready nor exited 60 s after start", f.name(), f.victim+1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%s: node %d started again; damage still in its files: %v; its log says: %s", f.name(), f.victim+1,
		f.damaged(), faultWarnings(bp.logTail(64<<10)))
	f.stop = make(chan struct{})
	admin := bp.adminAddr()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			select {
			case <-f.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if selfLeader(admin) && f.damaged() {
				f.mu.Lock()
				f.violations = append(f.violations, time.Now().Format("15:04:05.000"))
				f.mu.Unlock()
			}
		}
	}()
}

// damage damages the files in dir and says what it did.
func (f *faultCorrupt) damage(t *testing.T, dir string, rng *rand.Rand) string {
	t.Helper()
	var files []string
	switch f.target {
	case "segment":
		files, _ = filepath.Glob(filepath.Join(dir, "[^.]*", "*.log"))
	case "state":
		files = []string{filepath.Join(dir, "brokerd-state.db")}
	case "wal":
		files, _ = filepath.Glob(filepath.Join(dir, "raft", "wal", "*.wal"))
	default:
		t.Fatalf("faultCorrupt: unknown target %q", f.target)
	}
	// Non-empty files only, in a stable order for the seed.
	var sized []string
	for _, p := range files {
		if st, err := os.Stat(p); err == nil && st.Size() > 0 {
			sized = append(sized, p)
		}
	}
	slices.Sort(sized)
	if len(sized) == 0 {
		t.Fatalf("%s: no file to damage in %s (%v)", f.name(), dir, files)
	}
	path := sized[rng.IntN(len(sized))]
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(dir, path)
	// lo..hi: the bytes worth damaging.
	lo, hi := int64(0), int64(len(data))
	switch f.target {
	case "segment":
		bs := flipBatches(data)
		if len(bs) == 0 {
			t.Fatalf("%s: no record batch in %s", f.name(), path)
		}
		b := bs[rng.IntN(len(bs))]
		lo, hi = b.start+21, b.end // attributes to the end: what the CRC covers
		if f.how == "truncate" {
			lo = b.start + 1
		}
	case "wal":
		// Header to the last byte written (the rest is preallocated).
		lo = 32
		hi = int64(len(bytes.TrimRight(data, "\x00")))
		if hi <= lo {
			t.Fatalf("%s: nothing written in %s", f.name(), path)
		}
	}
	switch f.how {
	case "flip":
		n := 1 + rng.IntN(3)
		var where []string
		for range n {
			d := flipBit(t, path, lo+rng.Int64N(hi-lo), rng)
			f.flips = append(f.flips, d)
			where = append(where, fmt.Sprintf("%d (%#02x->%#02x)", d.pos, d.orig, d.now))
		}
		return fmt.Sprintf("flipped %d bit(s) of %s (%d bytes; drawn from %d..%d) at %s", n, rel, len(data), lo, hi, strings.Join(where, ", "))
	case "truncate":
		at := lo + rng.Int64N(hi-lo)
		if err := os.Truncate(path, at); err != nil {
			t.Fatal(err)
		}
		f.truncated, f.truncSize = path, int64(len(data))
		return fmt.Sprintf("truncated %s from %d to %d bytes", rel, len(data), at)
	}
	t.Fatalf("faultCorrupt: unknown damage %q", f.how)
	return ""
}

func (f *faultCorrupt) heal(t *testing.T, c *procCluster) {
	t.Helper()
	bp := c.nodes[f.victim]
	if f.stop != nil {
		close(f.stop)
		f.wg.Wait()
		f.stop = nil
	}
	// A damaged segment is damage the node serves; a flipped byte in the
	// state file or raft's log may lie in bytes it never reads again
	// (bbolt's free space, entries below the checkpoint), so there it is
	// noted, and the checks after healing judge what it did.
	report := t.Logf
	if f.target == "segment" {
		report = t.Errorf
	}
	if n := len(f.violations); n > 0 {
		report("%s: node %d led with damaged data, seen %d times from %s to %s", f.name(), f.victim+1, n, f.violations[0], f.violations[n-1])
		f.violations = nil
	}
	if bp.running() {
		f.checkServed(t, c)
	}
	if bp.running() && f.damaged() {
		report("%s: node %d runs with its damage undetected at heal", f.name(), f.victim+1)
	}
	if !bp.running() || (f.target == "segment" && f.damaged()) {
		if bp.running() {
			if code := bp.term(30 * time.Second); code != 0 {
				t.Logf("node %d exited %d after SIGTERM", f.victim+1, code)
			}
		}
		if err := os.RemoveAll(bp.dataDir); err != nil {
			t.Fatal(err)
		}
		bp.start()
		t.Logf("%s: node %d wiped and started again", f.name(), f.victim+1)
		if f.target == "segment" {
			// Rebuilt from its peers before the next round may pick it:
			// until then it has no segment to damage.
			waitFor(t, 60*time.Second, "the wiped node's segments rebuilt", func() (bool, string) {
				files, _ := filepath.Glob(filepath.Join(bp.dataDir, "[^.]*", "*.log"))
				for _, p := range files {
					if st, err := os.Stat(p); err == nil && st.Size() > 0 {
						return true, p
					}
				}
				return false, fmt.Sprintf("%d empty segment files", len(files))
			})
		}
	}
	f.flips, f.truncated = nil, ""
}

// crcErrRE matches franz-go's CRC complaint.
var crcErrRE = regexp.MustCompile(`crc .* does not match`)

// checkServed reads every topic from the victim (as a follower, through
// its rack, or as the leader) and reports any batch franz-go found damaged.
func (f *faultCorrupt) checkServed(t *testing.T, c *procCluster) {
	t.Helper()
	bp := c.nodes[f.victim]
	adm := kadm.NewClient(newKgo(t, bp.kafkaAddr(), kgo.SeedBrokers(c.seeds()...)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx)
	if err != nil {
		t.Logf("%s: list end offsets: %v (no read check)", f.name(), err)
		return
	}
	starts, _ := adm.ListStartOffsets(ctx)
	want := map[string]map[int32]kgo.Offset{}
	left := 0
	ends.Each(func(o kadm.ListedOffset) {
		if strings.HasPrefix(o.Topic, "__") || o.Err != nil {
			return
		}
		s, _ := starts.Lookup(o.Topic, o.Partition)
		if o.Offset > s.Offset {
			if want[o.Topic] == nil {
				want[o.Topic] = map[int32]kgo.Offset{}
			}
			want[o.Topic][o.Partition] = kgo.NewOffset().At(s.Offset)
			left += int(o.Offset - s.Offset)
		}
	})
	before := fetchCount(t, bp.adminAddr())
	cl := newKgo(t, bp.kafkaAddr(), kgo.SeedBrokers(c.seeds()...), kgo.ConsumePartitions(want),
		kgo.Rack(fmt.Sprintf("rack-%d", f.victim+1)), kgo.FetchMaxWait(100*time.Millisecond))
	got, crcErrs := 0, 0
	var firstErr string
	for got < left && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(tp string, p int32, err error) {
			if crcErrRE.MatchString(err.Error()) {
				crcErrs++
				if firstErr == "" {
					firstErr = fmt.Sprintf("%s/%d: %v", tp, p, err)
				}
			}
		})
		got += fs.NumRecords()
		if crcErrs > 0 {
			break
		}
	}
	cl.Close()
	served := fetchCount(t, bp.adminAddr()) - before
	t.Logf("%s: read %d of %d records with node %d's rack; it answered %v fetches", f.name(), got, left, f.victim+1, served)
	if crcErrs > 0 {
		t.Errorf("%s: node %d served a damaged batch (franz-go: %s)", f.name(), f.victim+1, firstErr)
	}
}

// faultReadyz is /readyz's status code, 0 if it does not answer.
func faultReadyz(admin string) (int, string) {
	hc := &http.Client{Timeout: time.Second}
	resp, err := hc.Get("http://" + admin + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// faultLastError is what brokerd said last in its last start: its exit
// message, or a Go runtime's fatal error.
func faultLastError(log string) string {
	if i := strings.LastIndex(log, "===== e2e: start #"); i >= 0 {
		log = log[i:]
	}
	if i := strings.Index(log, "fatal error:"); i >= 0 {
		return strings.Join(strings.SplitN(log[i:], "\n", 3)[:2], " ")
	}
	if i := strings.Index(log, "panic:"); i >= 0 {
		return strings.SplitN(log[i:], "\n", 2)[0]
	}
	lines := strings.Split(strings.TrimSpace(log), "\n")
	return lines[len(lines)-1]
}

// faultWarnings lists the distinct warnings and errors of the last start.
func faultWarnings(log string) string {
	if i := strings.LastIndex(log, "===== e2e: start #"); i >= 0 {
		log = log[i:]
	}
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if (strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR")) && !strings.Contains(l, "maps to no config key") {
			if i := strings.Index(l, "msg="); i >= 0 {
				l = l[i:]
			}
			if len(l) > 300 {
				l = l[:300]
			}
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	if len(out) == 0 {
		return "no warning"
	}
	if len(out) > 6 {
		out = append(out[:6], fmt.Sprintf("... %d more", len(out)-6))
	}
	return strings.Join(out, "\n\t")
}

// faultLeadDamaged asks the cluster to hand leadership to the damaged
// node, which it must refuse (or lose at once) while the damage is there.
func (f *faultCorrupt) faultLeadDamaged(t *testing.T, c *procCluster) {
	t.Helper()
	bp := c.nodes[f.victim]
	if !bp.running() {
		return
	}
	code, body := adminCall(t, http.MethodPost, bp.adminAddr(), "/v1/cluster/leader", map[string]int{"node_id": f.victim + 1})
	time.Sleep(time.Second)
	if len(body) > 120 {
		body = append(body[:120], "..."...)
	}
	t.Logf("%s: asked to move leadership to damaged node %d: %d %s; leader now node %d", f.name(), f.victim+1, code,
		strings.TrimSpace(string(body)), c.leader()+1)
}

// faultCorruptRun runs a corruption fault for two rounds. In the first,
// the test asks for leadership to move to the damaged node (which must
// not lead while damaged); in the second it leaves leadership alone, and
// the read at heal fetches from the damaged node as a follower.
func faultCorruptRun(t *testing.T, target, how string) {
	f := &faultCorrupt{target: target, how: how}
	faultRun(t, f, faultOpts{rounds: 2, hold: 2 * time.Second, during: func(t *testing.T, c *procCluster, round int) {
		if round%2 == 0 {
			f.faultLeadDamaged(t, c)
		}
	}})
}

// faultKnownBug skips a test that fails on a known, reported bug unless
// BROKERD_FAULT_KNOWN_BUGS=1.
func faultKnownBug(t *testing.T, bug string) {
	t.Helper()
	if os.Getenv("BROKERD_FAULT_KNOWN_BUGS") != "1" {
		t.Skipf("known bug (BROKERD_FAULT_KNOWN_BUGS=1 runs it): %s", bug)
	}
}

func TestFaultCorruptSegmentTruncate(t *testing.T) { faultCorruptRun(t, "segment", "truncate") }
func TestFaultCorruptStateFlip(t *testing.T)       { faultCorruptRun(t, "state", "flip") }
func TestFaultCorruptStateTruncate(t *testing.T)   { faultCorruptRun(t, "state", "truncate") }
func TestFaultCorruptWALTruncate(t *testing.T)     { faultCorruptRun(t, "wal", "truncate") }

// TestFaultCorruptWALFlip: bits flipped in the written part of a stopped
// follower's raft-wal segment. raft-wal itself checks the checksum of its
// last write only; it served the damaged entry (seed 1796313305353521743:
// the node, made leader, served a batch whose CRC fails, and 13992 of
// 31801 acknowledged records were unreadable from it). The store now
// checks every commit of every segment at start (raftstore/walverify.go):
// the node refuses to start, naming the segment and what to do, and heal
// wipes and rebuilds it from its peers.
func TestFaultCorruptWALFlip(t *testing.T) {
	faultCorruptRun(t, "wal", "flip")
}

// TestFaultCorruptSegmentFlip: a bit flipped in a flushed segment of a
// stopped follower. Open trusts segments below the recovery point without
// reading their CRCs, so the node starts; but no read serves a segment it
// trusted before checking its CRCs (log/verify.go), a background pass
// checks them all at start, and a node leading a group hands leadership
// off until that pass completes (raftstore/verify.go). The damage is found
// within moments of the start: the node writes DAMAGED into its data
// directory and stops (and would refuse to start again while the marker
// is there); heal then wipes its data directory, and it is rebuilt from its
// peers. Before, the node started with no warning, could be made leader,
// and served the damaged batch (franz-go: "encoded crc ... does not match
// calculated crc").
func TestFaultCorruptSegmentFlip(t *testing.T) { faultCorruptRun(t, "segment", "flip") }
