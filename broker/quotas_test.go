package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore/quota"
)

func alterEntry(client string, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	we := kmsg.NewAlterClientQuotasRequestEntryEntity()
	we.Type, we.Name = quota.TypeClientID, &client
	e.Entity, e.Ops = append(e.Entity, we), ops
	return e
}

func setQuotaOp(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = key, v
	return op
}

func removeQuotaOp(key string) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Remove = key, true
	return op
}

func alterQuotas(t *testing.T, b *Broker, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) []kmsg.AlterClientQuotasResponseEntry {
	t.Helper()
	r := kmsg.NewPtrAlterClientQuotasRequest()
	r.ValidateOnly, r.Entries = validateOnly, entries
	return b.alterClientQuotas(context.Background(), r).(*kmsg.AlterClientQuotasResponse).Entries
}

func TestAlterClientQuotasErrors(t *testing.T) {
	b := newTestBroker(t, nil)
	cases := []struct {
		name  string
		entry kmsg.AlterClientQuotasRequestEntry
		code  int16
		msg   string
	}{
		{"unknown key", alterEntry("c", setQuotaOp("bogus_rate", 1)), kerr.InvalidRequest.Code, "invalid configuration key"},
		{"controller_mutation_rate refused, not stored", alterEntry("c", setQuotaOp(quota.ControllerMutationRate, 5)), kerr.InvalidRequest.Code, "not enforced"},
		{"negative value", alterEntry("c", setQuotaOp("producer_byte_rate", -1)), kerr.InvalidRequest.Code, "greater than 0"},
		{"fractional byte rate", alterEntry("c", setQuotaOp("producer_byte_rate", 1.5)), kerr.InvalidRequest.Code, "fractional"},
		{"removing an unknown key is ignored", alterEntry("c", removeQuotaOp("bogus_rate"), removeQuotaOp(quota.ControllerMutationRate)), 0, ""},
	}
	for _, c := range cases {
		got := alterQuotas(t, b, false, c.entry)[0]
		msg := ""
		if got.ErrorMessage != nil {
			msg = *got.ErrorMessage
		}
		if got.ErrorCode != c.code || !strings.Contains(msg, c.msg) {
			t.Errorf("%s: code %d %q, want %d containing %q", c.name, got.ErrorCode, msg, c.code, c.msg)
		}
	}
	if n := b.store.Quotas().Len(); n != 0 {
		t.Errorf("%d entities stored by refused alterations", n)
	}
	// A duplicate entity: one INVALID_REQUEST, nothing changed.
	res := alterQuotas(t, b, false, alterEntry("d", setQuotaOp("producer_byte_rate", 1)), alterEntry("d", setQuotaOp("producer_byte_rate", 2)))
	if len(res) != 1 || res[0].ErrorCode != kerr.InvalidRequest.Code || b.store.Quotas().Len() != 0 {
		t.Errorf("duplicate entity: %d results, code %d, %d entities", len(res), res[0].ErrorCode, b.store.Quotas().Len())
	}
}

// validate_only answers what the commit would: past quota.MaxEntities,
// ErrTooMany.
func TestAlterClientQuotasValidateOnlyLimit(t *testing.T) {
	b := newTestBroker(t, nil)
	for start := 0; start < quota.MaxEntities; start += quota.MaxPerCommand {
		var entries []kmsg.AlterClientQuotasRequestEntry
		for i := start; i < start+quota.MaxPerCommand; i++ {
			entries = append(entries, alterEntry(fmt.Sprintf("c%d", i), setQuotaOp("producer_byte_rate", 1)))
		}
		for _, r := range alterQuotas(t, b, false, entries...) {
			if r.ErrorCode != 0 {
				t.Fatalf("filling: code %d", r.ErrorCode)
			}
		}
	}
	for _, validate := range []bool{true, false} {
		res := alterQuotas(t, b, validate,
			alterEntry("new", setQuotaOp("producer_byte_rate", 1)),
			alterEntry("c0", setQuotaOp("producer_byte_rate", 2)))
		if res[0].ErrorCode != kerr.InvalidRequest.Code || res[1].ErrorCode != 0 {
			t.Errorf("validate_only %v at the bound: codes %d, %d; want INVALID_REQUEST for the new entity only", validate, res[0].ErrorCode, res[1].ErrorCode)
		}
	}
	// Removing one entity makes room for another in the same request.
	res := alterQuotas(t, b, true,
		alterEntry("c1", removeQuotaOp("producer_byte_rate")),
		alterEntry("new", setQuotaOp("producer_byte_rate", 1)))
	if res[0].ErrorCode != 0 || res[1].ErrorCode != 0 {
		t.Errorf("validate_only, a removal then a new entity: codes %d, %d", res[0].ErrorCode, res[1].ErrorCode)
	}
}

func TestDescribeClientQuotasErrors(t *testing.T) {
	b := newTestBroker(t, nil)
	name := "x"
	cases := []struct {
		name string
		c    kmsg.DescribeClientQuotasRequestComponent
		code int16
	}{
		{"unknown entity type", kmsg.DescribeClientQuotasRequestComponent{EntityType: "group", MatchType: 1}, kerr.UnsupportedVersion.Code},
		{"exact without a name", kmsg.DescribeClientQuotasRequestComponent{EntityType: quota.TypeUser, MatchType: 0}, kerr.InvalidRequest.Code},
		{"default with a name", kmsg.DescribeClientQuotasRequestComponent{EntityType: quota.TypeUser, MatchType: 1, Match: &name}, kerr.InvalidRequest.Code},
		{"unknown match type", kmsg.DescribeClientQuotasRequestComponent{EntityType: quota.TypeUser, MatchType: 7}, kerr.InvalidRequest.Code},
	}
	for _, c := range cases {
		r := kmsg.NewPtrDescribeClientQuotasRequest()
		r.Components = append(r.Components, c.c)
		resp := b.describeClientQuotas(r).(*kmsg.DescribeClientQuotasResponse)
		if resp.ErrorCode != c.code || resp.ErrorMessage == nil || len(resp.Entries) != 0 {
			t.Errorf("%s: code %d, message %v, %d entries; want code %d with a message", c.name, resp.ErrorCode, resp.ErrorMessage, len(resp.Entries), c.code)
		}
	}
}
