package raftstore

import (
	"fmt"
	"sync/atomic"

	"github.com/brokerd/brokerd/raftstore/acl"
)

// ACLs (the access control bindings) are replicated state like topics:
// created and deleted by raft commands, checkpointed in the state DB
// (acls_checkpoint.go), carried in snapshots. Deletion is by filter, and
// the filter is matched in apply against the replicated bindings, so that
// every replica deletes the same ones whatever the proposer saw.

// aclTable holds the bindings. Apply (the FSM goroutine) is its only
// writer; readers load index, an immutable acl.Index rebuilt after every
// change.
type aclTable struct {
	byKey map[string]acl.Binding // FSM goroutine only
	index atomic.Pointer[acl.Index]
	// size is the bindings' acl.Binding.Size summed, bounded by
	// acl.MaxStateBytes; written by the FSM goroutine, read by proposers.
	size atomic.Int64
}

// set replaces the bindings (at load and after an install).
func (t *aclTable) set(bindings map[string]acl.Binding) {
	t.byKey = bindings
	n := 0
	for _, b := range bindings {
		n += b.Size()
	}
	t.size.Store(int64(n))
	t.rebuild()
}

func (t *aclTable) rebuild() {
	all := make([]acl.Binding, 0, len(t.byKey))
	for _, b := range t.byKey {
		all = append(all, b)
	}
	t.index.Store(acl.NewIndex(all))
}

type createACLsCmd struct {
	Bindings []acl.Binding `json:"bindings"`
}

type deleteACLsCmd struct {
	Filters []acl.Filter `json:"filters"`
}

// CreateACLsResult answers a create: one error (or nil) per binding, in
// order.
type CreateACLsResult struct {
	Errs []error
}

// DeleteACLsResult answers a delete: per filter, in order, an error (an
// invalid filter) or the bindings it deleted.
type DeleteACLsResult struct {
	Errs    []error
	Deleted [][]acl.Binding
}

// applyCreateACLs adds each valid binding; one that exists already is
// left as it is. A binding past acl.MaxBindings is refused.
func (f *fsm) applyCreateACLs(c *createACLsCmd) any {
	if len(c.Bindings) > acl.MaxPerCommand {
		return fmt.Errorf("%w: %d ACLs in one create (at most %d)", ErrInvalidCommand, len(c.Bindings), acl.MaxPerCommand)
	}
	t := &f.acls
	if t.byKey == nil {
		t.byKey = map[string]acl.Binding{}
	}
	res := &CreateACLsResult{Errs: make([]error, len(c.Bindings))}
	changed := false
	for i, b := range c.Bindings {
		if err := b.Validate(); err != nil {
			res.Errs[i] = err
			continue
		}
		k := b.Key()
		if _, ok := t.byKey[k]; ok {
			continue
		}
		if len(t.byKey) >= acl.MaxBindings {
			res.Errs[i] = fmt.Errorf("%w: the cluster holds %d ACLs", acl.ErrTooMany, acl.MaxBindings)
			continue
		}
		if n := t.size.Load() + int64(b.Size()); n > acl.MaxStateBytes {
			res.Errs[i] = fmt.Errorf("%w: the cluster's ACLs would take %d bytes (at most %d)", acl.ErrTooLarge, n, acl.MaxStateBytes)
			continue
		}
		t.size.Add(int64(b.Size()))
		t.byKey[k] = b
		f.dirty.acls[k] = true
		changed = true
	}
	if changed {
		t.rebuild()
	}
	return res
}

// applyDeleteACLs deletes, for each valid filter, the bindings it
// matches in the replicated state; a binding several filters match is
// reported under each.
func (f *fsm) applyDeleteACLs(c *deleteACLsCmd) any {
	if len(c.Filters) > acl.MaxPerCommand {
		return fmt.Errorf("%w: %d ACL filters in one delete (at most %d)", ErrInvalidCommand, len(c.Filters), acl.MaxPerCommand)
	}
	t := &f.acls
	x := t.index.Load()
	res := &DeleteACLsResult{Errs: make([]error, len(c.Filters)), Deleted: make([][]acl.Binding, len(c.Filters))}
	changed := false
	for i, flt := range c.Filters {
		if err := flt.Validate(); err != nil {
			res.Errs[i] = err
			continue
		}
		res.Deleted[i] = x.Bindings(flt)
		for _, b := range res.Deleted[i] {
			k := b.Key()
			if _, ok := t.byKey[k]; !ok {
				continue // an earlier filter of this command deleted it
			}
			t.size.Add(-int64(b.Size()))
			delete(t.byKey, k)
			f.dirty.acls[k] = true
			changed = true
		}
	}
	if changed {
		t.rebuild()
	}
	return res
}

// ACLs returns the current bindings' index: what requests are authorized
// against. It is never nil, and is immutable.
func (s *Store) ACLs() *acl.Index {
	if x := s.fsm.acls.index.Load(); x != nil {
		return x
	}
	return acl.NewIndex(nil)
}
