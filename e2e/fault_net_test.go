package e2e

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Network faults. Every directed raft link, node i dialing node j, runs
// through a TCP proxy the test owns (node i is told, by
// brokerd.raft.dial.overrides, to dial peer j at the proxy). Raft sends
// its RPCs on connections the caller dials and reads the answers on the
// same connection, so proxy i->j carries i's requests to j and j's answers
// to them: cutting it silences i towards j, while j's own requests to i
// (on proxy j->i) still pass.
//
// A proxy is open, refusing or a blackhole:
//   - refuse: its connections are reset at once, and every new one is
//     accepted and reset (an RST, as from a host with nothing listening);
//   - blackhole: nothing is forwarded either way, nothing is closed: the
//     bytes a connection carried up to the cut wait in the proxy and in
//     the kernel's buffers, and a new connection is accepted and left
//     waiting. Both ends see a silent peer and must time out. On heal the
//     stalled streams go on intact, as TCP's retransmissions would carry
//     them after a network outage, unless an end gave up meanwhile.

type proxyMode int

const (
	proxyOpen proxyMode = iota
	proxyRefuse
	proxyBlackhole
)

func (m proxyMode) String() string {
	return [...]string{"open", "refuse", "blackhole"}[m]
}

// proxyLink carries one directed raft link.
type proxyLink struct {
	from, to int // node indexes: from dials to
	ln       net.Listener
	target   string

	mu     sync.Mutex
	mode   proxyMode
	gate   chan struct{} // closed at the next change of mode
	closed bool
	conns  map[net.Conn]struct{}
	// accepted counts the connections accepted, forwarded the bytes
	// forwarded (both ways).
	accepted, forwarded int64
}

func newProxyLink(t testing.TB, from, to int, target string) *proxyLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxyLink{from: from, to: to, ln: ln, target: target, gate: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	t.Cleanup(p.close)
	go p.serve()
	return p
}

func (p *proxyLink) addr() string { return p.ln.Addr().String() }

func (p *proxyLink) close() {
	p.mu.Lock()
	p.closed = true
	p.resetLocked()
	p.mu.Unlock()
	p.ln.Close()
}

// set changes the mode. Refusing resets every connection the proxy holds.
func (p *proxyLink) set(m proxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	if m == proxyRefuse {
		p.resetLocked()
	}
	close(p.gate)
	p.gate = make(chan struct{})
}

func (p *proxyLink) resetLocked() {
	for c := range p.conns {
		proxyReset(c)
	}
}

// proxyReset closes c with an RST rather than a FIN.
func proxyReset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func (p *proxyLink) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[c] = struct{}{}
	if p.closed {
		c.Close()
	}
}

func (p *proxyLink) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// pass waits while the link is a blackhole and tells whether bytes may go
// on (false: refused or closed).
func (p *proxyLink) pass() bool {
	for {
		p.mu.Lock()
		m, gate, closed := p.mode, p.gate, p.closed
		p.mu.Unlock()
		switch {
		case closed || m == proxyRefuse:
			return false
		case m == proxyOpen:
			return true
		}
		<-gate
	}
}

func (p *proxyLink) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.accepted++
		refuse := p.mode == proxyRefuse
		p.mu.Unlock()
		if refuse {
			proxyReset(in)
			continue
		}
		go p.carry(in)
	}
}

func (p *proxyLink) carry(in net.Conn) {
	p.track(in)
	defer p.untrack(in)
	// A connection made into a blackhole waits, unanswered but open.
	if !p.pass() {
		proxyReset(in)
		return
	}
	out, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		proxyReset(in)
		return
	}
	p.track(out)
	defer p.untrack(out)
	done := make(chan struct{}, 2)
	go func() { p.pump(out, in); done <- struct{}{} }()
	go func() { p.pump(in, out); done <- struct{}{} }()
	<-done
}

// pump copies src to dst while the link lets it.
func (p *proxyLink) pump(dst, src net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass() {
				proxyReset(src)
				proxyReset(dst)
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			p.mu.Lock()
			p.forwarded += int64(n)
			p.mu.Unlock()
		}
		if err != nil {
			// Pass the end on, so the other side sees it too.
			if tc, ok := dst.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
	}
}

// proxyMesh is a proxy on every directed raft link of a cluster:
// links[i][j] carries node i's dials to node j.
type proxyMesh struct {
	c     *procCluster
	links [][]*proxyLink
}

func newProxyMesh(t testing.TB, c *procCluster) *proxyMesh {
	t.Helper()
	m := &proxyMesh{c: c, links: make([][]*proxyLink, len(c.nodes))}
	for i := range c.nodes {
		m.links[i] = make([]*proxyLink, len(c.nodes))
		for j, bp := range c.nodes {
			if i != j {
				m.links[i][j] = newProxyLink(t, i, j, fmt.Sprintf("127.0.0.1:%d", bp.raftPort))
			}
		}
	}
	return m
}

// args are node i's command-line arguments that route its raft dials
// through the mesh.
func (m *proxyMesh) args(i int) []string {
	var dial []string
	for j, p := range m.links[i] {
		if p != nil {
			dial = append(dial, fmt.Sprintf("%d@%s", j+1, p.addr()))
		}
	}
	return []string{"--override", "brokerd.raft.dial.overrides=" + strings.Join(dial, ",")}
}

// isolating lists every link to or from node n.
func (m *proxyMesh) isolating(n int) []*proxyLink {
	var out []*proxyLink
	for i := range m.links {
		for j, p := range m.links[i] {
			if p != nil && (i == n || j == n) {
				out = append(out, p)
			}
		}
	}
	return out
}

// proxyMeshes keeps one mesh per cluster, so that faults sharing a
// cluster share its proxies (a node has one set of dial overrides).
var proxyMeshes sync.Map // *procCluster -> *proxyMesh

// proxyMeshFor returns c's mesh, making it on first use (from a
// nodeSetup, before any node starts).
func proxyMeshFor(t testing.TB, c *procCluster) *proxyMesh {
	t.Helper()
	if m, ok := proxyMeshes.Load(c); ok {
		return m.(*proxyMesh)
	}
	m := newProxyMesh(t, c)
	proxyMeshes.Store(c, m)
	t.Cleanup(func() { proxyMeshes.Delete(c) })
	return m
}

// faultNet cuts raft links through the proxy mesh. scope is one of
//   - "link-oneway": one directed link i->j, drawn at random;
//   - "link-both": both directions between two nodes, drawn at random;
//   - "isolate-follower": every link to and from a follower;
//   - "isolate-leader": every link to and from the leader.
//
// mode is proxyRefuse or proxyBlackhole.
type faultNet struct {
	scope string
	mode  proxyMode
	cut   []*proxyLink
}

func (f *faultNet) name() string { return "net-" + f.scope + "-" + f.mode.String() }

func (f *faultNet) setupNode(t *testing.T, c *procCluster, i int) []string {
	return proxyMeshFor(t, c).args(i)
}

func (f *faultNet) inject(t *testing.T, c *procCluster, rng *rand.Rand) {
	t.Helper()
	mv, ok := proxyMeshes.Load(c)
	if !ok {
		t.Fatalf("%s: the cluster's raft links do not run through proxies (its nodeSetup was not used)", f.name())
	}
	m := mv.(*proxyMesh)
	n := len(c.nodes)
	var what string
	switch f.scope {
	case "link-oneway":
		i := rng.IntN(n)
		j := (i + 1 + rng.IntN(n-1)) % n
		f.cut = []*proxyLink{m.links[i][j]}
		what = fmt.Sprintf("node %d -> node %d", i+1, j+1)
	case "link-both":
		i := rng.IntN(n)
		j := (i + 1 + rng.IntN(n-1)) % n
		f.cut = []*proxyLink{m.links[i][j], m.links[j][i]}
		what = fmt.Sprintf("node %d <-> node %d", i+1, j+1)
	case "isolate-follower", "isolate-leader":
		v := faultTarget(t, c, rng, strings.TrimPrefix(f.scope, "isolate-"))
		f.cut = m.isolating(v)
		what = fmt.Sprintf("node %d from the others", v+1)
	default:
		t.Fatalf("faultNet: unknown scope %q", f.scope)
	}
	for _, p := range f.cut {
		p.set(f.mode)
	}
	t.Logf("%s: cut %s", f.name(), what)
}

func (f *faultNet) heal(t *testing.T, c *procCluster) {
	for _, p := range f.cut {
		p.set(proxyOpen)
	}
	f.cut = nil
}

func TestFaultNetIsolateLeaderRefuse(t *testing.T) {
	faultRun(t, &faultNet{scope: "isolate-leader", mode: proxyRefuse}, faultOpts{hold: 5 * time.Second})
}

func TestFaultNetIsolateLeaderBlackhole(t *testing.T) {
	faultRun(t, &faultNet{scope: "isolate-leader", mode: proxyBlackhole}, faultOpts{hold: 5 * time.Second})
}

func TestFaultNetIsolateFollowerBlackhole(t *testing.T) {
	faultRun(t, &faultNet{scope: "isolate-follower", mode: proxyBlackhole}, faultOpts{hold: 5 * time.Second})
}

func TestFaultNetLinkOneWay(t *testing.T) {
	faultRun(t, &faultNet{scope: "link-oneway", mode: proxyBlackhole}, faultOpts{hold: 5 * time.Second, rounds: 4})
}

func TestFaultNetLinkBoth(t *testing.T) {
	faultRun(t, &faultNet{scope: "link-both", mode: proxyRefuse}, faultOpts{hold: 5 * time.Second, rounds: 4})
}

// TestFaultNetProxyPassThrough: with every raft link through an open
// proxy, a cluster acknowledges about as much as one without proxies.
func TestFaultNetProxyPassThrough(t *testing.T) {
	matrixTest(t, false)
	measure := func(f fault) (int, *procCluster) {
		c := faultNewCluster(t, f)
		createClusterTopic(t, c, "passthrough", 3)
		lp := startLoad(t, c, "passthrough", 1e7)
		time.Sleep(time.Second)
		before, _ := lp.ledger.counts()
		time.Sleep(5 * time.Second)
		after, _ := lp.ledger.counts()
		lp.stop(t)
		checkHealed(t, c, lp, "passthrough", true)
		for _, bp := range c.nodes {
			bp.kill()
		}
		return after - before, c
	}
	direct, _ := measure(&faultKill{role: "leader"}) // no nodeSetup: raft dials directly
	proxied, c := measure(&faultNet{scope: "link-oneway", mode: proxyBlackhole})
	mv, _ := proxyMeshes.Load(c)
	var accepted, forwarded int64
	for _, row := range mv.(*proxyMesh).links {
		for _, p := range row {
			if p != nil {
				p.mu.Lock()
				accepted, forwarded = accepted+p.accepted, forwarded+p.forwarded
				p.mu.Unlock()
			}
		}
	}
	t.Logf("acknowledged in 5 s: %d direct, %d through proxies (%.0f%%); the proxies accepted %d connections and forwarded %d bytes",
		direct, proxied, 100*float64(proxied)/float64(direct), accepted, forwarded)
	if forwarded == 0 {
		t.Fatal("nothing went through the proxies")
	}
	if proxied < direct/2 {
		t.Fatalf("through proxies the cluster acknowledged %d records in 5 s, against %d directly", proxied, direct)
	}
}
