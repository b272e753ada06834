package admin

import (
	"encoding/base64"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Client is an admin client for one cluster.
type Client struct {
	cl  *kgo.Client
	adm *kadm.Client
}

// New connects to the cluster through the seed brokers (host:port). opts
// are added to franz-go's options (TLS, SASL, client id, ...).
func New(brokers []string, opts ...kgo.Opt) (*Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID("brokerd-admin")}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	return &Client{cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Close closes the connections.
func (c *Client) Close() { c.cl.Close() }

// Kadm is the underlying kadm client, for what this package does not wrap.
func (c *Client) Kadm() *kadm.Client { return c.adm }

// topicID renders a topic id as Kafka's tools do: URL-safe base64 without
// padding.
func topicID(id kadm.TopicID) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}
