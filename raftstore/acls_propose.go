package raftstore

import (
	"context"
	"fmt"

	"github.com/brokerd/brokerd/raftstore/acl"
)

// The proposer's side of the ACL commands (acls.go applies them). What
// apply would refuse alike for every replica is refused here first, and
// what JSON would change on the way (invalid UTF-8, rewritten) never
// reaches raft: apply would hold, or delete, another binding than the
// one asked for.

// CreateACLs creates bindings; the answer has one error (or nil) per
// binding.
func (s *Store) CreateACLs(ctx context.Context, bindings []acl.Binding) ([]error, error) {
	if err := s.admitWrite(); err != nil {
		return nil, err
	}
	errs := make([]error, len(bindings))
	var send []acl.Binding
	var at []int
	for i, b := range bindings {
		if errs[i] = b.Validate(); errs[i] == nil {
			send, at = append(send, b), append(at, i)
		}
	}
	if len(send) == 0 {
		return errs, nil
	}
	data, err := encodeJSON(cmdCreateACLs, createACLsCmd{Bindings: send})
	if err != nil {
		return nil, fmt.Errorf("create ACLs: %w", err)
	}
	if err := checkACLCommand(data); err != nil {
		return nil, fmt.Errorf("create ACLs: %w", err)
	}
	// A create that cannot fit is refused before raft (apply refuses
	// it again, binding by binding, against the state it applies to).
	if err := aclRoom(s.fsm.acls.size.Load(), send); err != nil {
		return nil, fmt.Errorf("create ACLs: %w", err)
	}
	resp, err := s.propose(ctx, data)
	if err != nil {
		return nil, fmt.Errorf("create ACLs: %w", err)
	}
	switch r := resp.(type) {
	case *CreateACLsResult:
		for j, e := range r.Errs {
			errs[at[j]] = e
		}
		return errs, nil
	case error:
		return nil, fmt.Errorf("create ACLs: %w", r)
	}
	return nil, fmt.Errorf("create ACLs: unexpected answer %T", resp)
}

// DeleteACLs deletes the bindings each filter matches, as the replicated
// state holds them when the command applies.
func (s *Store) DeleteACLs(ctx context.Context, filters []acl.Filter) (*DeleteACLsResult, error) {
	out := &DeleteACLsResult{Errs: make([]error, len(filters)), Deleted: make([][]acl.Binding, len(filters))}
	var send []acl.Filter
	var at []int
	for i, f := range filters {
		if out.Errs[i] = f.Validate(); out.Errs[i] == nil {
			send, at = append(send, f), append(at, i)
		}
	}
	if len(send) == 0 {
		return out, nil
	}
	data, err := encodeJSON(cmdDeleteACLs, deleteACLsCmd{Filters: send})
	if err != nil {
		return nil, fmt.Errorf("delete ACLs: %w", err)
	}
	if err := checkACLCommand(data); err != nil {
		return nil, fmt.Errorf("delete ACLs: %w", err)
	}
	resp, err := s.propose(ctx, data)
	if err != nil {
		return nil, fmt.Errorf("delete ACLs: %w", err)
	}
	switch r := resp.(type) {
	case *DeleteACLsResult:
		for j := range r.Errs {
			out.Errs[at[j]], out.Deleted[at[j]] = r.Errs[j], r.Deleted[j]
		}
		return out, nil
	case error:
		return nil, fmt.Errorf("delete ACLs: %w", r)
	}
	return nil, fmt.Errorf("delete ACLs: unexpected answer %T", resp)
}

// checkACLCommand refuses an encoded ACL command over
// acl.MaxCommandBytes, on the proposer and in apply alike.
func checkACLCommand(data []byte) error {
	if len(data) > acl.MaxCommandBytes {
		return fmt.Errorf("%w: %w: a command of %d bytes (at most %d)", ErrInvalidCommand, acl.ErrTooLarge, len(data), acl.MaxCommandBytes)
	}
	return nil
}

// aclRoom refuses bindings that would take ACLs of size bytes past
// acl.MaxStateBytes (counting each as new).
func aclRoom(size int64, bindings []acl.Binding) error {
	for _, b := range bindings {
		size += int64(b.Size())
	}
	if size > acl.MaxStateBytes {
		return fmt.Errorf("%w: the cluster's ACLs would take %d bytes (at most %d)", acl.ErrTooLarge, size, acl.MaxStateBytes)
	}
	return nil
}
