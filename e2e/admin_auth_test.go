package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brokerd/brokerd/broker"
	"github.com/brokerd/brokerd/clients/processors"
	"github.com/brokerd/brokerd/internal/node"
	"github.com/brokerd/brokerd/internal/tlsconf"
	"github.com/brokerd/brokerd/internal/tlstest"
	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/raftstore/acl"
	"github.com/brokerd/brokerd/topic"
)

// TestSecureAdminCluster: three nodes with raft over mutual TLS, the admin
// API over TLS and the authorizer on. A processor deploy over https with
// a super user's Basic credentials works, sent to a follower (which
// forwards it to the leader with its own certificate); without
// credentials it is answered 401, with a user that has no ACL 403, and
// /healthz needs nothing. The nodes' certificate principal, User:node, has
// ClusterAction only (not Alter): the deploy succeeds only if the leader
// authorizes the principal the follower forwards, not the follower's own.
func TestSecureAdminCluster(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	// Every node holds a certificate for CN=node: User:node, a super
	// user, is the nodes' principal on raft and on each other's admin API.
	nodeCerts := []*tlstest.Pair{ca.Node("node1", "node"), ca.Node("node2", "node"), ca.Node("node3", "node")}
	nodes := startCluster(t, 3, func(cfg *node.Config) {
		ks := nodeCerts[cfg.NodeID-1].Keystore
		rules := `RULE:^CN=([^,]+)(,.*)?$/$1/,DEFAULT`
		cfg.RaftTLS = &tlsconf.Config{KeystoreLocation: ks, TruststoreLocation: ca.CAFile, PrincipalRules: rules}
		cfg.AdminTLS = &tlsconf.Config{KeystoreLocation: ks, TruststoreLocation: ca.CAFile, ClientAuth: tlsconf.ClientAuthRequested, PrincipalRules: rules}
		cfg.Authorizer = broker.AuthorizerConfig{Enabled: true, SuperUsers: []string{"User:admin"}}
		cfg.SASLBootstrapUsers = []node.BootstrapUser{
			{Name: "admin", Mechanism: "SCRAM-SHA-256", Password: "admin-secret"},
			{Name: "bob", Mechanism: "SCRAM-SHA-512", Password: "bob-secret"},
		}
	})
	var leader, follower *node.Node
	waitUntil(t, 20*time.Second, "a leader", func() bool {
		for _, n := range nodes {
			if n.Store().IsLeader() {
				leader = n
			}
		}
		return leader != nil
	})
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}
	// The nodes' principal: ClusterAction on the cluster, nothing else.
	if errs, err := leader.Store().CreateACLs(context.Background(), []acl.Binding{{ResourceType: acl.ResourceCluster, ResourceName: acl.ClusterName,
		PatternType: acl.PatternLiteral, Principal: "User:node", Host: "*", Operation: acl.OpClusterAction, Permission: acl.PermAllow}}); err != nil || errs[0] != nil {
		t.Fatalf("create the nodes' ACL: %v %v", err, errs)
	}
	// Created in the store: the Kafka listener's User:ANONYMOUS may not.
	if err := leader.Store().CreateTopic(context.Background(), "prices", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}

	client := func(user, pass string) *http.Client {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}
		if user == "" {
			return &http.Client{Transport: tr}
		}
		return &http.Client{Transport: basicRT{user: user, pass: pass, next: tr}}
	}
	base := "https://" + follower.AdminAddr()
	spec := []byte("name: double\ninputs: [prices]\noutput: doubled\nstages:\n  - map: {value: \"value.price * 2\"}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	resp, err := client("", "").Get(base + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	// The bootstrap users are created by the leader shortly after start.
	admin := processors.NewWithHTTP(base, client("admin", "admin-secret"))
	var ps []processors.Processor
	waitUntil(t, 20*time.Second, "a deploy as the admin user", func() bool {
		ps, err = admin.Deploy(ctx, spec)
		return err == nil
	})
	if len(ps) != 1 || ps[0].Name != "double" {
		t.Fatalf("deployed %+v", ps)
	}
	if _, err := admin.List(ctx); err != nil {
		t.Fatalf("list as the admin user: %v", err)
	}
	// bob exists now too (created with admin), without any ACL.
	for _, c := range []struct {
		user, pass, want string
	}{
		{"", "", "401"},
		{"admin", "wrong", "401"},
		{"bob", "bob-secret", "403"},
	} {
		_, err := processors.NewWithHTTP(base, client(c.user, c.pass)).Deploy(ctx, spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("deploy as %q: %v, want %s", c.user, err, c.want)
		}
	}
	// A plaintext request to the TLS admin listener is refused.
	if resp, err := http.Get("http://" + follower.AdminAddr() + "/healthz"); err == nil && resp.StatusCode == http.StatusOK {
		t.Fatal("plaintext HTTP served by the TLS admin listener")
	}
	// A client certificate of a super user's name works without Basic.
	admCert := ca.Client("admin-cert", pkix.Name{CommonName: "admin"})
	cc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{admCert.TLS}}}}
	if _, err := processors.NewWithHTTP(base, cc).Status(ctx, "double"); err != nil {
		t.Fatalf("get as the admin certificate: %v", err)
	}
	registrationBound(t, ca, leader, follower)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("timed out")
	}
}

// registrationBound: a follower's registration records its certificate's
// principal, and another principal with ClusterAction cannot rewrite it.
func registrationBound(t *testing.T, ca *tlstest.CA, leader, follower *node.Node) {
	t.Helper()
	id := follower.Store().NodeID()
	var cur raftstore.BrokerInfo
	waitUntil(t, 20*time.Second, "the follower's registration", func() bool {
		var ok bool
		cur, ok = leader.Store().Registered(id)
		return ok
	})
	if cur.Principal != "User:node" {
		t.Fatalf("node %d registered by %q, want User:node", id, cur.Principal)
	}
	if errs, err := leader.Store().CreateACLs(context.Background(), []acl.Binding{{ResourceType: acl.ResourceCluster, ResourceName: acl.ClusterName,
		PatternType: acl.PatternLiteral, Principal: "User:eve", Host: "*", Operation: acl.OpClusterAction, Permission: acl.PermAllow}}); err != nil || errs[0] != nil {
		t.Fatalf("create eve's ACL: %v %v", err, errs)
	}
	eve := ca.Client("eve", pkix.Name{CommonName: "eve"})
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{eve.TLS}}}}
	evil := cur
	evil.Host, evil.Listeners = "203.0.113.9", nil
	body, _ := json.Marshal(evil)
	resp, err := cl.Post("https://"+leader.AdminAddr()+"/v1/cluster/brokers", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("User:eve re-registering node %d: %s, want 403", id, resp.Status)
	}
	if got, _ := leader.Store().Registered(id); got.Host != cur.Host {
		t.Fatalf("node %d's host rewritten to %s", id, got.Host)
	}
}

// basicRT sets HTTP Basic credentials.
type basicRT struct {
	user, pass string
	next       http.RoundTripper
}

func (b basicRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.user, b.pass)
	return b.next.RoundTrip(r)
}
