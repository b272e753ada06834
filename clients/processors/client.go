package processors

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/brokerd/brokerd/clients/internal/adminhttp"
)

// Processor is a processor's status as the admin API reports it.
type Processor struct {
	Name         string           `json:"name"`
	State        string           `json:"state"`
	Inputs       []string         `json:"inputs"`
	Output       string           `json:"output"`
	Generation   uint64           `json:"generation"`
	Offsets      map[string]int64 `json:"offsets"`
	Lag          int64            `json:"lag"`
	RecordsIn    int64            `json:"records_in"`
	RecordsOut   int64            `json:"records_out"`
	DLQ          int64            `json:"dlq"`
	Late         int64            `json:"late"`
	Steps        int64            `json:"steps"`
	StateEntries int              `json:"state_entries"`
	LastStepMs   int64            `json:"last_step_ms"`
	LastError    string           `json:"last_error,omitempty"`
	Spec         json.RawMessage  `json:"spec"`
}

// StateValue is a key's committed aggregate.
type StateValue struct {
	Key   string         `json:"key"`
	Value map[string]any `json:"value"`
}

// Client talks to one member's admin address; the member forwards to the
// leader.
type Client struct {
	addr string
	hc   *http.Client
}

// New returns a client for the admin address host:port (or a URL).
func New(addr string) *Client { return &Client{addr: adminhttp.Base(addr), hc: http.DefaultClient} }

// NewWithHTTP is New with its own HTTP client: TLS (give addr as
// https://host:port) and credentials.
func NewWithHTTP(addr string, hc *http.Client) *Client {
	return &Client{addr: adminhttp.Base(addr), hc: hc}
}

// Deploy deploys the specs in spec (YAML documents or JSON).
func (c *Client) Deploy(ctx context.Context, spec []byte) ([]Processor, error) {
	var out []Processor
	err := adminhttp.Do(ctx, c.hc, c.addr, http.MethodPost, "/v1/processors", spec, &out)
	return out, err
}

// List lists the processors.
func (c *Client) List(ctx context.Context) ([]Processor, error) {
	out := []Processor{}
	err := adminhttp.Do(ctx, c.hc, c.addr, http.MethodGet, "/v1/processors", nil, &out)
	return out, err
}

// Status reports one processor.
func (c *Client) Status(ctx context.Context, name string) (Processor, error) {
	var p Processor
	err := adminhttp.Do(ctx, c.hc, c.addr, http.MethodGet, "/v1/processors/"+url.PathEscape(name), nil, &p)
	return p, err
}

// Pause pauses a processor; Resume resumes it.
func (c *Client) Pause(ctx context.Context, name string) (Processor, error) {
	return c.post(ctx, "/v1/processors/"+url.PathEscape(name)+"/pause")
}

// Resume resumes a paused processor.
func (c *Client) Resume(ctx context.Context, name string) (Processor, error) {
	return c.post(ctx, "/v1/processors/"+url.PathEscape(name)+"/resume")
}

func (c *Client) post(ctx context.Context, path string) (Processor, error) {
	var p Processor
	err := adminhttp.Do(ctx, c.hc, c.addr, http.MethodPost, path, nil, &p)
	return p, err
}

// Delete removes a processor and its state.
func (c *Client) Delete(ctx context.Context, name string) error {
	return adminhttp.Do(ctx, c.hc, c.addr, http.MethodDelete, "/v1/processors/"+url.PathEscape(name), nil, nil)
}

// State returns the committed aggregate of key.
func (c *Client) State(ctx context.Context, name, key string) (StateValue, error) {
	var v StateValue
	err := adminhttp.Do(ctx, c.hc, c.addr, http.MethodGet, "/v1/processors/"+url.PathEscape(name)+"/state/"+url.PathEscape(key), nil, &v)
	return v, err
}
