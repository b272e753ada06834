package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/brokerd/brokerd/raftstore"
)

// The cluster admin API, on the admin listener:
//
//	GET    /v1/cluster                  the cluster id and its members
//	POST   /v1/cluster/members          {"node_id":4,"raft_addr":"h:p"}: add a voter
//	DELETE /v1/cluster/members/{id}     remove a member
//	POST   /v1/cluster/leader           {"node_id":3}: transfer leadership
//	POST   /v1/cluster/brokers          a member registers its Kafka identity
//
// Any member answers: a non-leader forwards a change to the leader's admin
// address (which the leader registered), once.

const forwardedHeader = "X-Brokerd-Forwarded"

// ClusterMember is one member as GET /v1/cluster shows it.
type ClusterMember struct {
	NodeID    int32  `json:"node_id"`
	RaftAddr  string `json:"raft_addr"`
	KafkaAddr string `json:"kafka_addr,omitempty"`
	AdminAddr string `json:"admin_addr,omitempty"`
	Rack      string `json:"rack,omitempty"`
	Suffrage  string `json:"suffrage"`
	Leader    bool   `json:"leader"`
}

// ClusterStatus is GET /v1/cluster.
type ClusterStatus struct {
	ClusterID string `json:"cluster_id"`
	// NodeID is the node that answered.
	NodeID   int32 `json:"node_id"`
	LeaderID int32 `json:"leader_id"`
	// LeaderVerified: asked with ?verify=leader, the node that answered
	// leads and has just confirmed it with a quorum.
	LeaderVerified bool            `json:"leader_verified,omitempty"`
	Members        []ClusterMember `json:"members"`
}

func (n *Node) clusterRoutes(mux guardedMux) {
	mux.HandleFunc("GET /v1/cluster", n.getCluster)
	mux.HandleFunc("POST /v1/cluster/members", n.onLeader(n.addMember))
	mux.HandleFunc("DELETE /v1/cluster/members/{id}", n.onLeader(n.removeMember))
	mux.HandleFunc("POST /v1/cluster/leader", n.onLeader(n.transferLeader))
	mux.HandleFunc("POST /v1/cluster/brokers", n.onLeader(n.registerBroker))
	mux.HandleFunc("POST /v1/cluster/segments/held", n.heldSegments)
}

func (n *Node) getCluster(w http.ResponseWriter, r *http.Request) {
	st := ClusterStatus{ClusterID: n.store.ClusterID(), NodeID: n.cfg.NodeID, LeaderID: -1}
	if r.URL.Query().Get("verify") == "leader" {
		// Verified first: the membership read after it is this leader's.
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		st.LeaderVerified = n.store.VerifyLeader(ctx) == nil
		cancel()
	}
	ms, err := n.store.Members()
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, err)
		return
	}
	if id, ok := n.store.Leader(); ok {
		st.LeaderID = id
	}
	for _, m := range ms {
		cm := ClusterMember{NodeID: m.NodeID, RaftAddr: m.RaftAddr, Suffrage: m.Suffrage, Leader: m.Leader}
		if m.Registered {
			cm.KafkaAddr = net.JoinHostPort(m.Broker.Host, strconv.Itoa(int(m.Broker.Port)))
			cm.AdminAddr, cm.Rack = m.Broker.Admin, m.Broker.Rack
		}
		st.Members = append(st.Members, cm)
	}
	writeJSONResponse(w, http.StatusOK, st)
}

// onLeader runs h on the leader, and forwards the request there from any
// other member.
func (n *Node) onLeader(h func(http.ResponseWriter, *http.Request, []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			httpError(w, http.StatusBadRequest, err)
			return
		}
		if n.store.IsLeader() {
			h(w, r, body)
			return
		}
		if r.Header.Get(forwardedHeader) != "" {
			httpError(w, http.StatusServiceUnavailable, errors.New("not the raft leader (forwarded here by a member that thought so); retry"))
			return
		}
		n.forward(w, r, body)
	}
}

// forward sends a request on to the leader's admin address and copies the
// answer back.
func (n *Node) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	id, ok := n.store.Leader()
	if !ok {
		httpError(w, http.StatusServiceUnavailable, errors.New("no raft leader known; retry"))
		return
	}
	b, ok := n.store.Registered(id)
	if !ok || b.Admin == "" {
		httpError(w, http.StatusServiceUnavailable, fmt.Errorf("the leader (node %d) has not registered an admin address; send this to its admin listener", id))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, n.adminURL(b.Admin, r.URL.RequestURI()), bytes.NewReader(body))
	if err != nil {
		httpError(w, http.StatusInternalServerError, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(forwardedHeader, strconv.Itoa(int(n.cfg.NodeID)))
	n.setForwarded(req, r)
	resp, err := n.adminHTTP.Do(req)
	if err != nil {
		httpError(w, http.StatusBadGateway, fmt.Errorf("forward to the leader (node %d at %s): %w", id, b.Admin, err))
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, 1<<20))
}

func (n *Node) addMember(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		NodeID   int32  `json:"node_id"`
		RaftAddr string `json:"raft_addr"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.NodeID <= 0 || req.RaftAddr == "" {
		httpError(w, http.StatusBadRequest, fmt.Errorf("want {\"node_id\": N > 0, \"raft_addr\": \"host:port\"} (%v)", err))
		return
	}
	if _, _, err := net.SplitHostPort(req.RaftAddr); err != nil {
		httpError(w, http.StatusBadRequest, fmt.Errorf("raft_addr: %w", err))
		return
	}
	if err := n.store.AddVoter(r.Context(), req.NodeID, req.RaftAddr); err != nil {
		httpError(w, statusOf(err), err)
		return
	}
	n.logger.Info("added a cluster member", "node_id", req.NodeID, "raft_addr", req.RaftAddr)
	n.getCluster(w, r)
}

func (n *Node) removeMember(w http.ResponseWriter, r *http.Request, _ []byte) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil || id <= 0 {
		httpError(w, http.StatusBadRequest, fmt.Errorf("node id %q", r.PathValue("id")))
		return
	}
	if err := n.store.RemoveMember(r.Context(), int32(id)); err != nil {
		httpError(w, statusOf(err), err)
		return
	}
	n.logger.Info("removed a cluster member", "node_id", id)
	n.getCluster(w, r)
}

func (n *Node) transferLeader(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		NodeID int32 `json:"node_id"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.NodeID <= 0 {
		httpError(w, http.StatusBadRequest, fmt.Errorf("want {\"node_id\": N > 0} (%v)", err))
		return
	}
	if err := n.store.TransferLeadershipTo(r.Context(), req.NodeID); err != nil {
		httpError(w, statusOf(err), err)
		return
	}
	n.getCluster(w, r)
}

func (n *Node) registerBroker(w http.ResponseWriter, r *http.Request, body []byte) {
	var b raftstore.BrokerInfo
	if err := json.Unmarshal(body, &b); err != nil || b.NodeID <= 0 || b.Host == "" || b.Port <= 0 {
		httpError(w, http.StatusBadRequest, fmt.Errorf("want a broker with node_id, host and port (%v)", err))
		return
	}
	ms, err := n.store.Members()
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, err)
		return
	}
	member := false
	for _, m := range ms {
		member = member || m.NodeID == b.NodeID
	}
	if !member {
		httpError(w, http.StatusForbidden, fmt.Errorf("node %d is not a member of the cluster", b.NodeID))
		return
	}
	if err := n.bindRegistration(r, &b); err != nil {
		n.logger.Warn("refused a broker registration", "node_id", b.NodeID, "err", err)
		httpError(w, http.StatusForbidden, err)
		return
	}
	if err := n.store.RegisterBroker(r.Context(), b); err != nil {
		httpError(w, statusOf(err), err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, raftstore.ErrNotLeader), errors.Is(err, raftstore.ErrUnknownOutcome), errors.Is(err, raftstore.ErrClosed):
		return http.StatusServiceUnavailable
	case errors.Is(err, raftstore.ErrUnknownMember):
		return http.StatusNotFound
	case errors.Is(err, raftstore.ErrForeignRegistration):
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}

func httpError(w http.ResponseWriter, code int, err error) {
	writeJSONResponse(w, code, map[string]string{"error": err.Error()})
}

func writeJSONResponse(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// registerSelf makes sure the FSM holds this node's Kafka identity: on the
// leader onLeader registers it; a follower asks the leader, through its
// admin API, until the registration shows up. It runs until the node
// closes.
func (n *Node) registerSelf(ctx context.Context, self raftstore.BrokerInfo) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	limit := newLogLimiter(time.Minute, 1)
	for i := 0; ; i++ {
		if cur, ok := n.store.Registered(self.NodeID); !ok || !registered(cur, self, i) {
			if err := n.askRegistration(ctx, self); err != nil {
				n.logRegistrationFailure(limit, err)
			}
		}
		if i%5 == 4 && n.removed(ctx) {
			n.serveErr <- errors.New("this node was removed from the cluster (brokerd cluster remove); it no longer serves. Wipe its data directory before it joins again")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// registered reports whether cur, the FSM's registration, is self's. A
// leader from before per-listener addresses registers self without them:
// that counts, and is asked again only every 30th pass (the leader may have
// been upgraded since), rather than a raft entry a second.
func registered(cur, self raftstore.BrokerInfo, pass int) bool {
	if cur.Equal(self) {
		return true
	}
	if cur.Principal == "" && self.Principal != "" && pass%30 == 0 {
		// Registered before principals were recorded: bind it.
		return false
	}
	older := self
	older.Listeners = nil
	return cur.Equal(older) && pass%30 != 0
}

func (n *Node) askRegistration(ctx context.Context, self raftstore.BrokerInfo) error {
	if n.store.IsLeader() {
		if cur, ok := n.store.Registered(self.NodeID); ok && cur.Principal != "" && cur.Principal != self.Principal {
			return fmt.Errorf("node %d: %w", self.NodeID, errRegisteredAs(cur.Principal))
		}
		return n.store.RegisterBroker(ctx, self)
	}
	id, ok := n.store.Leader()
	if !ok {
		return fmt.Errorf("%w: no leader", errNotYet)
	}
	lb, ok := n.store.Registered(id)
	if !ok || lb.Admin == "" {
		return fmt.Errorf("%w: leader %d has no admin address registered", errNotYet, id)
	}
	body, _ := json.Marshal(self)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, n.adminURL(lb.Admin, "/v1/cluster/brokers"), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.adminHTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &registrationError{leader: id, status: resp.StatusCode, msg: fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(msg))}
	}
	return nil
}

// registrationError is the leader's refusal of a registration.
type registrationError struct {
	leader int32
	status int
	msg    string
}

func (e *registrationError) Error() string { return fmt.Sprintf("leader %d: %s", e.leader, e.msg) }

// errNotYet: no leader to register with yet (an election, a start).
var errNotYet = errors.New("not yet")

// logRegistrationFailure logs a failed registration at Warn, with the
// leader's HTTP status when it answered (a certificate or ACL problem does
// not heal by itself), at most once a minute; no leader yet at Debug.
func (n *Node) logRegistrationFailure(limit *logLimiter, err error) {
	if errors.Is(err, errNotYet) || errors.Is(err, context.Canceled) {
		n.logger.Debug("registration with the leader", "err", err)
		return
	}
	ok, suppressed := limit.allow("registration")
	if !ok {
		return
	}
	attrs := []any{"err", err, "suppressed", suppressed}
	var re *registrationError
	if errors.As(err, &re) {
		attrs = append(attrs, "status", re.status)
	}
	n.logger.Warn("broker registration with the leader failed; other nodes may not find this node's listeners", attrs...)
}

// join asks the cluster, through a member's admin address, to add this node
// as a voter, retrying until it answers or ctx ends, then waits until a
// leader is known. A node that is already a member (a restart) is added
// again as a no-op.
func (n *Node) join(ctx context.Context, addr string) error {
	raftAddr := n.store.RaftAddr()
	cl := n.adminClient(15 * time.Second)
	body, _ := json.Marshal(map[string]any{"node_id": n.cfg.NodeID, "raft_addr": raftAddr})
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.adminURL(addr, "/v1/cluster/members"), bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("join %s: %w", addr, err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := cl.Do(req)
		if err == nil {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			switch {
			case resp.StatusCode/100 == 2:
				n.logger.Info("joined the cluster", "through", addr, "raft_addr", raftAddr)
				return n.store.WaitLeader(ctx)
			case resp.StatusCode/100 == 4:
				return fmt.Errorf("join %s: %s: %s", addr, resp.Status, bytes.TrimSpace(msg))
			}
			err = fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("join the cluster through %s: %w (last: %v)", addr, ctx.Err(), last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// removed reports whether this node was removed from the cluster: the
// leader said so twice in a row. Raft does not tell a removed node: the
// leader simply stops replicating to it.
func (n *Node) removed(ctx context.Context) bool {
	return n.noteRemoval(n.leaderSaysRemoved(ctx))
}

// noteRemoval records one check's answer and reports whether it and the
// one before both said removed.
func (n *Node) noteRemoval(gone bool) bool {
	return n.removedOnce.Swap(gone) && gone
}

// leaderSaysRemoved asks the members this node knows for the cluster's
// membership and believes only the leader's own answer, verified with a
// quorum: a lagging member, or a deposed leader that never saw this node
// join, does not count. A member that is not the leader points to the
// one it follows, which is asked next (it may be a node this one has never
// heard of, if the cluster was changed while it was cut off).
func (n *Node) leaderSaysRemoved(ctx context.Context) bool {
	if n.store.IsLeader() {
		return false
	}
	ms, err := n.store.Members()
	if err != nil {
		return false
	}
	cl := n.adminClient(3 * time.Second)
	ask := func(admin string) (ClusterStatus, bool) {
		var st ClusterStatus
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.adminURL(admin, "/v1/cluster?verify=leader"), nil)
		if err != nil {
			return st, false
		}
		resp, err := cl.Do(req)
		if err != nil {
			return st, false
		}
		defer resp.Body.Close()
		return st, resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st) == nil
	}
	for _, m := range ms {
		if m.NodeID == n.cfg.NodeID || !m.Registered || m.Broker.Admin == "" {
			continue
		}
		st, ok := ask(m.Broker.Admin)
		if !ok {
			continue
		}
		if gone, trusted := judgeRemoval(st, m.NodeID, n.cfg.NodeID); trusted {
			return gone
		}
		// Ask the leader this member follows.
		for _, sm := range st.Members {
			if sm.NodeID == st.LeaderID && sm.NodeID != m.NodeID && sm.AdminAddr != "" {
				if lst, ok := ask(sm.AdminAddr); ok {
					if gone, trusted := judgeRemoval(lst, sm.NodeID, n.cfg.NodeID); trusted {
						return gone
					}
				}
			}
		}
	}
	return false
}

// judgeRemoval reads member asked's answer st for node self: trusted only
// when asked answered as the leader, verified with a quorum; then gone
// when self is not in its membership.
func judgeRemoval(st ClusterStatus, asked, self int32) (gone, trusted bool) {
	if st.NodeID != asked || st.LeaderID != st.NodeID || !st.LeaderVerified || len(st.Members) == 0 {
		return false, false
	}
	for _, sm := range st.Members {
		if sm.NodeID == self {
			return false, true
		}
	}
	return true, true
}
