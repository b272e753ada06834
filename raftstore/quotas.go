package raftstore

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/brokerd/brokerd/raftstore/quota"
)

// Client quotas are replicated state like ACLs: changed by one raft
// command, validated in apply, checkpointed in the state DB
// (quotas_checkpoint.go) and carried in snapshots. Enforcement is each
// broker's own (broker/throttle), against the index published here.

// quotaTable holds the quotas. Apply (the FSM goroutine) is its only
// writer; readers load index, rebuilt after every change.
type quotaTable struct {
	byEntity map[quota.Entity]quota.Values // FSM goroutine only
	index    atomic.Pointer[quota.Index]
}

// set replaces the quotas (at load and after an install).
func (t *quotaTable) set(m map[quota.Entity]quota.Values) {
	t.byEntity = m
	t.index.Store(quota.NewIndex(m))
}

// alterQuotasCmd changes the quotas of some entities.
type alterQuotasCmd struct {
	Alterations []quota.Alteration `json:"alterations"`
}

// applyAlterQuotas applies each alteration that validates, and returns
// one error (or nil) per alteration, in order. An entity named twice in
// the command is refused each time, as Kafka's controller ignores a
// duplicate entity.
func (f *fsm) applyAlterQuotas(c *alterQuotasCmd) any {
	if len(c.Alterations) > quota.MaxPerCommand {
		return fmt.Errorf("%w: %d quota alterations in one command (at most %d)", ErrInvalidCommand, len(c.Alterations), quota.MaxPerCommand)
	}
	t := &f.quotas
	if t.byEntity == nil {
		t.byEntity = map[quota.Entity]quota.Values{}
	}
	count := make(map[quota.Entity]int, len(c.Alterations))
	for _, a := range c.Alterations {
		count[a.Entity]++
	}
	errs := make([]error, len(c.Alterations))
	changed := false
	for i := range c.Alterations {
		a := &c.Alterations[i]
		if count[a.Entity] > 1 {
			errs[i] = fmt.Errorf("%w: ignoring duplicate entity %s", quota.ErrInvalid, a.Entity)
			continue
		}
		cur, had := t.byEntity[a.Entity]
		next, err := a.Apply(cur)
		if err != nil {
			errs[i] = err
			continue
		}
		if next == cur {
			continue
		}
		if next.Empty() {
			delete(t.byEntity, a.Entity)
		} else {
			if !had && len(t.byEntity) >= quota.MaxEntities {
				errs[i] = fmt.Errorf("%w: the cluster holds %d quota entities", quota.ErrTooMany, quota.MaxEntities)
				continue
			}
			t.byEntity[a.Entity] = next
		}
		f.dirty.quotas[a.Entity] = true
		changed = true
	}
	if changed {
		t.index.Store(quota.NewIndex(t.byEntity))
	}
	return errs
}

// Quotas returns the current quotas' index: never nil, and immutable.
func (s *Store) Quotas() *quota.Index {
	if x := s.fsm.quotas.index.Load(); x != nil {
		return x
	}
	return emptyQuotas
}

var emptyQuotas = quota.NewIndex(nil)

// AlterQuotas proposes quota alterations; the answer has one error (or
// nil) per alteration.
func (s *Store) AlterQuotas(ctx context.Context, alterations []quota.Alteration) ([]error, error) {
	if err := s.admitWrite(); err != nil {
		return nil, err
	}
	errs, err := proposeFor[[]error](ctx, s, cmdAlterQuotas, alterQuotasCmd{Alterations: alterations})
	if err != nil {
		return nil, fmt.Errorf("alter client quotas: %w", err)
	}
	return errs, nil
}
