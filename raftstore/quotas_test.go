package raftstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/raftstore/quota"
)

func userQuota(user string, ops ...quota.Op) quota.Alteration {
	return quota.Alteration{Entity: quota.Entity{User: quota.Named(user)}, Ops: ops}
}

func setOp(k string, v float64) quota.Op { return quota.Op{Key: k, Value: v} }

func TestQuotasApplyAndRestart(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	errs, err := s.AlterQuotas(ctx, []quota.Alteration{
		userQuota("alice", setOp("producer_byte_rate", 1024), setOp("request_percentage", 50)),
		{Entity: quota.Entity{ClientID: quota.Default}, Ops: []quota.Op{setOp("consumer_byte_rate", 2048)}},
		userQuota("bob", setOp("producer_byte_rate", 1.5)),                        // fractional
		userQuota("carol", setOp("no_such_key", 1)),                               // unknown key
		userQuota("dave", setOp("producer_byte_rate", 1)),                         // duplicate entity
		userQuota("dave", setOp("consumer_byte_rate", 1)),                         // duplicate entity
		{Entity: quota.Entity{}, Ops: []quota.Op{setOp("producer_byte_rate", 1)}}, // empty entity
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if want := i >= 2; (e != nil) != want || (want && !errors.Is(e, quota.ErrInvalid)) {
			t.Fatalf("alteration %d: %v", i, e)
		}
	}
	if n := s.Quotas().Len(); n != 2 {
		t.Fatalf("%d quota entities, want 2", n)
	}
	// Removing the last key removes the entity.
	if errs, err := s.AlterQuotas(ctx, []quota.Alteration{userQuota("alice", quota.Op{Key: "producer_byte_rate", Remove: true}, quota.Op{Key: "request_percentage", Remove: true})}); err != nil || errs[0] != nil {
		t.Fatalf("remove: %v %v", err, errs)
	}
	if n := s.Quotas().Len(); n != 1 {
		t.Fatalf("after remove: %d entities", n)
	}
	// Replayed from raft's log after a crash before any checkpoint.
	s.crashForTest()
	s = openTestStore(t, dir)
	if n := s.Quotas().Len(); n != 1 {
		t.Fatalf("after crash: %d entities, want 1", n)
	}
	if _, err := s.AlterQuotas(ctx, []quota.Alteration{userQuota("erin", setOp("producer_byte_rate", 10))}); err != nil {
		t.Fatal(err)
	}
	// From the checkpoint a clean close writes.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	defer s.Close()
	m, ok := s.Quotas().Resolve(quota.ProducerByteRate, "erin", "x")
	if s.Quotas().Len() != 2 || !ok || m.Limit != 10 {
		t.Fatalf("after restart: %+v %v %+v", s.Quotas().All(), ok, m)
	}
	if m, ok := s.Quotas().Resolve(quota.ConsumerByteRate, "zed", "x"); !ok || m.Limit != 2048 || m.ClientID != "x" {
		t.Fatalf("default client quota after restart: %+v %v", m, ok)
	}
}

func TestQuotasReplicate(t *testing.T) {
	c := newTestCluster(t, nil)
	ld := c.leader()
	if _, err := ld.AlterQuotas(context.Background(), []quota.Alteration{userQuota("u", setOp("producer_byte_rate", 100))}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i, s := range c.nodes {
		for s.Quotas().Len() != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("node %d has %d quota entities", i+1, s.Quotas().Len())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestQuotasManifestRoundTrip(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	if _, err := s.AlterQuotas(context.Background(), []quota.Alteration{userQuota("u", setOp("consumer_byte_rate", 7))}); err != nil {
		t.Fatal(err)
	}
	stream, _ := streamSnapshot(t, s)
	raw, err := readSnapManifest(bytes.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeManifest(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Quotas) != 1 || got.Quotas[0].Values[quota.ConsumerByteRate] != 7 {
		t.Fatalf("snapshot quotas: %+v", got.Quotas)
	}
	m := manifest{Quotas: append(got.Quotas, got.Quotas[0])}
	if m.validateQuotas() == nil {
		t.Fatal("a repeated entity validated")
	}
	m.Quotas = []quota.Entry{{Entity: quota.Entity{User: quota.Named("u")}, Values: quota.Values{-1}}}
	if m.validateQuotas() == nil {
		t.Fatal("a negative quota validated")
	}
	m.Quotas = []quota.Entry{{Entity: quota.Entity{User: quota.Named("u")}}}
	if m.validateQuotas() == nil {
		t.Fatal("an empty entity validated")
	}
}

func TestApplyAlterQuotasBounds(t *testing.T) {
	fs := &fsm{logger: testLogger()}
	fs.dirty.reset()
	big := make([]quota.Alteration, quota.MaxPerCommand+1)
	if _, ok := fs.applyAlterQuotas(&alterQuotasCmd{Alterations: big}).(error); !ok {
		t.Fatal("an oversized command applied")
	}
	fs.quotas.byEntity = map[quota.Entity]quota.Values{}
	for i := range quota.MaxEntities {
		fs.quotas.byEntity[quota.Entity{User: quota.Named(strconv.Itoa(i))}] = quota.Values{1}
	}
	errs := fs.applyAlterQuotas(&alterQuotasCmd{Alterations: []quota.Alteration{userQuota("one-more", setOp("producer_byte_rate", 1))}}).([]error)
	if !errors.Is(errs[0], quota.ErrTooMany) {
		t.Fatalf("past the bound: %v", errs[0])
	}
}

// FuzzQuotaCommand applies arbitrary alter-quotas commands to an FSM: it
// never panics, and what it holds stays valid and bounded.
func FuzzQuotaCommand(f *testing.F) {
	good, _ := json.Marshal(alterQuotasCmd{Alterations: []quota.Alteration{userQuota("a", setOp("producer_byte_rate", 10))}})
	f.Add(good, []byte(`{"alterations":[{"entity":{"user":{"k":1},"client_id":{"k":2,"n":"c"}},"ops":[{"key":"request_percentage","value":0.5}]}]}`))
	f.Add([]byte(`{"alterations":[{"entity":{"user":{"k":9,"n":"x"}},"ops":[{"key":"producer_byte_rate","value":-3}]}]}`), []byte(`{}`))
	f.Add([]byte(`{"alterations":[{"entity":{"user":{"k":2,"n":"a"}},"ops":[{"key":"producer_byte_rate","remove":true}]}]}`), []byte(`null`))
	// The table starts two entities short of its bound, so that a command
	// can reach it (one command holds at most MaxPerCommand alterations).
	prefill := map[quota.Entity]quota.Values{}
	for i := range quota.MaxEntities - 2 {
		prefill[quota.Entity{User: quota.Named(fmt.Sprintf("pre-%d", i))}] = quota.Values{quota.ProducerByteRate: 1}
	}
	f.Add([]byte(`{"alterations":[{"entity":{"user":{"k":2,"n":"n1"}},"ops":[{"key":"producer_byte_rate","value":1}]},{"entity":{"user":{"k":2,"n":"n2"}},"ops":[{"key":"producer_byte_rate","value":1}]},{"entity":{"user":{"k":2,"n":"n3"}},"ops":[{"key":"producer_byte_rate","value":1}]}]}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, d1, d2 []byte) {
		fs := &fsm{logger: testLogger()}
		fs.dirty.reset()
		fs.quotas.byEntity = maps.Clone(prefill)
		fs.quotas.index.Store(quota.NewIndex(fs.quotas.byEntity))
		for i, d := range [][]byte{d1, d2} {
			fs.applyCommand(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: append([]byte{byte(cmdAlterQuotas)}, d...)})
		}
		x := fs.quotas.index.Load()
		if n := len(fs.quotas.byEntity); n > quota.MaxEntities || x.Len() != n {
			t.Fatalf("index of %d, table of %d (bound %d)", x.Len(), n, quota.MaxEntities)
		}
		for e, v := range fs.quotas.byEntity {
			if got, ok := x.Get(e); !ok || got != v {
				t.Fatalf("index holds %v for %s, table %v", got, e, v)
			}
		}
		m := manifest{Quotas: x.All()}
		if err := m.validateQuotas(); err != nil {
			t.Fatalf("held state does not validate: %v", err)
		}
	})
}
