package cluster

import (
	"context"
	"fmt"
	"net/http"

	"github.com/brokerd/brokerd/clients/internal/adminhttp"
)

// Member is one member of the cluster.
type Member struct {
	NodeID    int32  `json:"node_id"`
	RaftAddr  string `json:"raft_addr"`
	KafkaAddr string `json:"kafka_addr"`
	AdminAddr string `json:"admin_addr,omitempty"`
	Rack      string `json:"rack,omitempty"`
	Suffrage  string `json:"suffrage"`
	Leader    bool   `json:"leader"`
}

// Status is the cluster as one member sees it.
type Status struct {
	ClusterID string   `json:"cluster_id"`
	LeaderID  int32    `json:"leader_id"`
	Members   []Member `json:"members"`
}

// Client talks to one member's admin address.
type Client struct {
	addr string
	hc   *http.Client
}

// New returns a client for the admin address host:port (or a URL).
func New(addr string) *Client {
	return &Client{addr: adminhttp.Base(addr), hc: http.DefaultClient}
}

// NewWithHTTP is New with its own HTTP client: TLS (give addr as
// https://host:port) and credentials.
func NewWithHTTP(addr string, hc *http.Client) *Client {
	return &Client{addr: adminhttp.Base(addr), hc: hc}
}

// Status lists the members.
func (c *Client) Status(ctx context.Context) (Status, error) {
	return c.do(ctx, http.MethodGet, "/v1/cluster", nil)
}

// Add adds node id, reachable for raft at raftAddr, as a voter.
func (c *Client) Add(ctx context.Context, id int32, raftAddr string) (Status, error) {
	return c.do(ctx, http.MethodPost, "/v1/cluster/members", map[string]any{"node_id": id, "raft_addr": raftAddr})
}

// Remove removes node id from the cluster.
func (c *Client) Remove(ctx context.Context, id int32) (Status, error) {
	return c.do(ctx, http.MethodDelete, fmt.Sprintf("/v1/cluster/members/%d", id), nil)
}

// TransferLeader hands raft leadership to node id.
func (c *Client) TransferLeader(ctx context.Context, id int32) (Status, error) {
	return c.do(ctx, http.MethodPost, "/v1/cluster/leader", map[string]any{"node_id": id})
}

func (c *Client) do(ctx context.Context, method, path string, body any) (Status, error) {
	var st Status
	err := adminhttp.Do(ctx, c.hc, c.addr, method, path, body, &st)
	return st, err
}
