package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/raftstore/quota"
)

// DescribeClientQuotas (API 48) and AlterClientQuotas (API 49), as
// Kafka's KRaft controller answers them. Changes are raft commands, so
// only the leader makes them (another node answers NOT_CONTROLLER);
// DescribeClientQuotas reads the node's replicated state.

// quotaCode maps a quota error to its Kafka code and message.
func quotaCode(err error) (int16, *string) {
	switch {
	case errors.Is(err, raftstore.ErrNotLeader):
		msg := "this node is not the raft leader; send quota changes to the controller"
		return kerr.NotController.Code, &msg
	case errors.Is(err, quota.ErrInvalid), errors.Is(err, quota.ErrTooMany):
		return kerr.InvalidRequest.Code, errorMessage(err)
	case errors.Is(err, quota.ErrUnsupportedType):
		return kerr.UnsupportedVersion.Code, errorMessage(err)
	}
	return errorCode(err), errorMessage(err)
}

func (b *Broker) describeClientQuotas(r *kmsg.DescribeClientQuotasRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeClientQuotasResponse()
	comps := make([]quota.Component, len(r.Components))
	for i, c := range r.Components {
		comps[i] = quota.Component{Type: c.EntityType, Match: quota.MatchType(c.MatchType), Name: c.Match}
	}
	f, err := quota.NewFilter(comps, r.Strict)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = quotaCode(err)
		return resp
	}
	for _, e := range b.store.Quotas().Describe(f) {
		re := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range e.Entity.Wire() {
			we := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			we.Type, we.Name = p.Type, p.Name
			re.Entity = append(re.Entity, we)
		}
		for k, v := range e.Values {
			if v != 0 {
				wv := kmsg.NewDescribeClientQuotasResponseEntryValue()
				wv.Key, wv.Value = quota.Key(k).String(), v
				re.Values = append(re.Values, wv)
			}
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp
}

// alterClientQuotas answers one result per entity of the request (an
// entity named twice gets one INVALID_REQUEST, as in Kafka, and is not
// changed). Each valid entity's changes apply on their own; with
// validate_only nothing is changed.
func (b *Broker) alterClientQuotas(ctx context.Context, r *kmsg.AlterClientQuotasRequest) kmsg.Response {
	resp := kmsg.NewPtrAlterClientQuotasResponse()
	result := func(entity []kmsg.AlterClientQuotasRequestEntryEntity, err error) {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range entity {
			we := kmsg.NewAlterClientQuotasResponseEntryEntity()
			we.Type, we.Name = p.Type, p.Name
			re.Entity = append(re.Entity, we)
		}
		if err != nil {
			re.ErrorCode, re.ErrorMessage = quotaCode(err)
		}
		resp.Entries = append(resp.Entries, re)
	}
	if len(r.Entries) > quota.MaxPerCommand {
		err := fmt.Errorf("%w: %d entities in one request (at most %d)", quota.ErrInvalid, len(r.Entries), quota.MaxPerCommand)
		for _, e := range r.Entries {
			result(e.Entity, err)
		}
		return resp
	}
	entities := make([]quota.Entity, len(r.Entries))
	parseErrs := make([]error, len(r.Entries))
	count := map[quota.Entity]int{}
	for i, e := range r.Entries {
		parts := make([]quota.WirePart, len(e.Entity))
		for j, p := range e.Entity {
			parts[j] = quota.WirePart{Type: p.Type, Name: p.Name}
		}
		entities[i], parseErrs[i] = quota.EntityFromWire(parts)
		if parseErrs[i] == nil {
			count[entities[i]]++
		}
	}
	current := b.store.Quotas()
	held := current.Len() // entities after the alterations so far
	var alts []quota.Alteration
	var altOf []int // request entry of each alteration
	errs := make([]error, len(r.Entries))
	reported := map[quota.Entity]bool{}
	skip := make([]bool, len(r.Entries))
	for i, e := range r.Entries {
		ent := entities[i]
		switch {
		case parseErrs[i] != nil:
			errs[i] = parseErrs[i]
			continue
		case count[ent] > 1:
			if reported[ent] {
				skip[i] = true
			}
			reported[ent] = true
			errs[i] = fmt.Errorf("%w: ignoring duplicate entity %s", quota.ErrInvalid, ent)
			continue
		}
		a := quota.Alteration{Entity: ent, Ops: make([]quota.Op, len(e.Ops))}
		for j, op := range e.Ops {
			a.Ops[j] = quota.Op{Key: op.Key, Value: op.Value, Remove: op.Remove}
		}
		cur, had := current.Get(ent)
		next, err := a.Apply(cur)
		if err != nil {
			errs[i] = err
			continue
		}
		if r.ValidateOnly {
			// What the commit would refuse, validate_only refuses too.
			if held, err = countEntities(held, had, next); err != nil {
				errs[i] = err
				continue
			}
		}
		alts = append(alts, a)
		altOf = append(altOf, i)
	}
	if len(alts) > 0 && !r.ValidateOnly {
		applied, err := b.store.AlterQuotas(ctx, alts)
		for j, i := range altOf {
			switch {
			case err != nil:
				errs[i] = err
			case j < len(applied) && applied[j] != nil:
				errs[i] = applied[j]
			default:
				b.logger.Info("altered client quota", "entity", alts[j].Entity.String(), "ops", fmt.Sprintf("%+v", alts[j].Ops))
			}
		}
	}
	for i, e := range r.Entries {
		if !skip[i] {
			result(e.Entity, errs[i])
		}
	}
	return resp
}

// countEntities is held after an alteration leaves an entity with next
// (had: it holds quotas now); ErrTooMany past quota.MaxEntities, as the
// commit would answer.
func countEntities(held int, had bool, next quota.Values) (int, error) {
	switch {
	case had && next.Empty():
		return held - 1, nil
	case had || next.Empty():
		return held, nil
	case held >= quota.MaxEntities:
		return held, fmt.Errorf("%w: the cluster holds %d quota entities", quota.ErrTooMany, quota.MaxEntities)
	}
	return held + 1, nil
}
