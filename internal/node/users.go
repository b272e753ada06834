package node

import (
	"context"
	"errors"
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

// bootstrapUsers creates the configured users once this node leads, if
// they do not exist yet: the command is if-absent, so an existing user
// (created by another node, or altered since) is never overwritten. A
// node that finds another one leading does nothing. Only user names are
// logged.
func (n *Node) bootstrapUsers(ctx context.Context, users []BootstrapUser) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if n.store.IsLeader() {
			err := n.createBootstrapUsers(ctx, users)
			if err == nil {
				return
			}
			n.logger.Warn("creating SASL bootstrap users failed; retrying", "err", err)
		} else if _, ok := n.store.Leader(); ok {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (n *Node) createBootstrapUsers(ctx context.Context, users []BootstrapUser) error {
	var ups []raftstore.ScramCredential
	for _, u := range users {
		if _, ok := n.store.ScramCredential(u.Name, u.Mechanism); ok {
			continue
		}
		c, err := sasl.NewCredential(u.Mechanism, u.Name, u.Password, bootstrapIterations)
		if err != nil {
			return err
		}
		ups = append(ups, raftstore.ScramCredential{User: u.Name, Mechanism: u.Mechanism, Salt: c.Salt,
			Iterations: int32(c.Iterations), StoredKey: c.StoredKey, ServerKey: c.ServerKey})
	}
	if len(ups) == 0 {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	errs, err := n.store.AlterScram(pctx, ups, nil, true)
	if err != nil {
		return err
	}
	for i, e := range errs {
		switch {
		case e == nil:
			n.logger.Info("created SASL bootstrap user", "user", ups[i].User, "mechanism", ups[i].Mechanism)
		case errors.Is(e, raftstore.ErrScramCredentialExists):
		default:
			// A refused credential (a name too long, say) would be
			// refused again: report it, do not retry.
			n.logger.Error("SASL bootstrap user refused", "user", ups[i].User, "mechanism", ups[i].Mechanism, "err", e)
		}
	}
	return nil
}
