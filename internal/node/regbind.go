package node

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/brokerd/brokerd/internal/tlsconf"
	"github.com/brokerd/brokerd/raftstore"
)

// A node id's broker registration is bound to who made it: the first
// registration records the registering caller's principal (a node's
// client certificate on the admin API), and a later one from another
// principal is refused, so that a ClusterAction holder cannot take over
// another node's listeners. Removing the node (brokerd cluster remove)
// drops the registration and its principal.

// errRegisteredAs: a registration from a principal other than the one the
// node id is bound to.
type errRegisteredAs string

func (e errRegisteredAs) Error() string {
	return "registered by " + string(e) + "; only it may register this node id again (remove the node to change it)"
}

// errForeignRegistration is what errRegisteredAs wraps.
var errForeignRegistration = errors.New("foreign registration")

func (e errRegisteredAs) Unwrap() error { return errForeignRegistration }

// bindRegistration sets b's principal to the request's caller, and refuses
// a caller other than the one the node id is registered by. Without the
// authorizer there is no caller and no binding.
func (n *Node) bindRegistration(r *http.Request, b *raftstore.BrokerInfo) error {
	c, ok := callerOf(r.Context())
	if !ok {
		b.Principal = ""
		return nil
	}
	if cur, ok := n.store.Registered(b.NodeID); ok && cur.Principal != "" && cur.Principal != c.principal {
		return fmt.Errorf("node %d: %s: %w", b.NodeID, c.principal, errRegisteredAs(cur.Principal))
	}
	b.Principal = c.principal
	return nil
}

// selfPrincipal is the principal this node's admin calls authenticate as
// on another node with the authorizer on: its admin client certificate's,
// when it presents one that the other side asks for, else
// User:ANONYMOUS; "" with the authorizer off.
func (n *Node) selfPrincipal() (string, error) {
	if !n.cfg.Authorizer.Enabled {
		return "", nil
	}
	if n.adminTLS == nil || n.cfg.AdminTLS.ClientAuth == tlsconf.ClientAuthNone || n.cfg.AdminTLS.ClientAuth == "" ||
		!n.adminTLS.PresentsClientCertificate() {
		return tlsconf.Anonymous, nil
	}
	return n.adminTLS.OwnPrincipal()
}
