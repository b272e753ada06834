package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/brokerd/brokerd/broker/sasl"
	"github.com/brokerd/brokerd/raftstore"
)

// BootstrapUser is one entry of brokerd.sasl.bootstrap.users.
type BootstrapUser struct {
	Name, Mechanism, Password string
}

// bootstrapIterations is the SCRAM iteration count of bootstrap users
// (Kafka's minimum, which kafka-configs also uses by default).
const bootstrapIterations = raftstore.MinScramIterations

// scramLookup is the SASL listeners' credential lookup: this node's
// applied SCRAM credentials. Before the store is open nobody
// authenticates.
func (n *Node) scramLookup(user, mechanism string) (sasl.Credential, bool) {
	st := n.started.Load()
	if st == nil {
		return sasl.Credential{}, false
	}
	c, ok := st.ScramCredential(user, mechanism)
	if !ok {
		return sasl.Credential{}, false
	}
	return sasl.Credential{Salt: c.Salt, Iterations: int(c.Iterations), StoredKey: c.StoredKey, ServerKey: c.ServerKey}, true
}

// bootstrapUsers creates the configured users once per cluster. Every
// node runs it until this node has applied a bootstrap marker for each
// (raftstore.BootstrapScram): whichever node leads proposes the missing
// ones, so a leader change during creation only delays them, and a user
// deleted after its creation stays deleted. An existing credential
// (created by another node, or altered since) is never overwritten. Only
// user names are logged.
func (n *Node) bootstrapUsers(ctx context.Context, users []BootstrapUser) {
	users = n.acceptableBootstrapUsers(users)
	// Tries come every 200ms, and back off to every 30s while a try
	// changes nothing (a credential the store refuses, say: each try
	// costs a key derivation and an error line).
	const first, most = 200 * time.Millisecond, 30 * time.Second
	wait, left := first, -1
	for {
		pending := n.pendingBootstrapUsers(users)
		if len(pending) == 0 {
			return
		}
		if len(pending) != left {
			wait, left = first, len(pending)
		}
		if n.store.IsLeader() {
			if err := n.createBootstrapUsers(ctx, pending); err != nil {
				n.logger.Warn("creating SASL bootstrap users failed; retrying", "err", err, "in", wait)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, most)
	}
}

// acceptableBootstrapUsers drops, with an error logged once, the users
// whose credential the store would refuse (a name too long, say), which
// would otherwise stay pending for ever.
func (n *Node) acceptableBootstrapUsers(users []BootstrapUser) []BootstrapUser {
	out := users[:0:0]
	for _, u := range users {
		c := raftstore.ScramCredential{User: u.Name, Mechanism: u.Mechanism, Salt: []byte{0}, Iterations: bootstrapIterations,
			StoredKey: make([]byte, raftstore.ScramKeySize(u.Mechanism)), ServerKey: make([]byte, raftstore.ScramKeySize(u.Mechanism))}
		if err := raftstore.CheckScramCredential(&c); err != nil {
			n.logger.Error("SASL bootstrap user refused", "user", u.Name, "mechanism", u.Mechanism, "err", err)
			continue
		}
		out = append(out, u)
	}
	return out
}

// pendingBootstrapUsers are the users whose bootstrap marker this node
// has not applied.
func (n *Node) pendingBootstrapUsers(users []BootstrapUser) []BootstrapUser {
	var out []BootstrapUser
	for _, u := range users {
		if !n.store.ScramBootstrapped(u.Name, u.Mechanism) {
			out = append(out, u)
		}
	}
	return out
}

func (n *Node) createBootstrapUsers(ctx context.Context, users []BootstrapUser) error {
	ups := make([]raftstore.ScramCredential, 0, len(users))
	for _, u := range users {
		c, err := sasl.NewCredential(u.Mechanism, u.Name, u.Password, bootstrapIterations)
		if err != nil {
			return fmt.Errorf("user %s: %w", u.Name, err)
		}
		ups = append(ups, raftstore.ScramCredential{User: u.Name, Mechanism: u.Mechanism, Salt: c.Salt,
			Iterations: int32(c.Iterations), StoredKey: c.StoredKey, ServerKey: c.ServerKey})
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	errs, err := n.store.BootstrapScram(pctx, ups)
	if err != nil {
		return fmt.Errorf("propose: %w", err)
	}
	for i, e := range errs {
		switch {
		case e == nil:
			n.logger.Info("created SASL bootstrap user", "user", ups[i].User, "mechanism", ups[i].Mechanism)
		case errors.Is(e, raftstore.ErrScramCredentialExists), errors.Is(e, raftstore.ErrScramBootstrapped):
		default:
			// A refused credential (a name too long, say) is refused
			// again at each try: report it; it stays pending.
			n.logger.Error("SASL bootstrap user refused", "user", ups[i].User, "mechanism", ups[i].Mechanism, "err", e)
		}
	}
	return nil
}
