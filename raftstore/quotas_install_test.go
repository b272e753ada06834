package raftstore

import (
	"context"
	"testing"

	"github.com/brokerd/brokerd/raftstore/quota"
)

// A snapshot install carries the quotas over (regression: the review
// checked the checkpoint and install path).
func TestQuotasInstallRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := openTestStore(t, t.TempDir())
	if _, err := src.AlterQuotas(ctx, []quota.Alteration{userQuota("u", setOp("consumer_byte_rate", 7)), {Entity: quota.Entity{User: quota.Default, ClientID: quota.Default}, Ops: []quota.Op{setOp("request_percentage", 12.5)}}}); err != nil {
		t.Fatal(err)
	}
	stream, index := streamSnapshot(t, src)
	defer src.Close()
	dst := t.TempDir()
	d := openTestStore(t, dst)
	if _, err := d.AlterQuotas(ctx, []quota.Alteration{userQuota("stale", setOp("producer_byte_rate", 1))}); err != nil {
		t.Fatal(err)
	}
	crashAndReceive(t, d, dst, stream, index)
	d = openTestStore(t, dst)
	defer d.Close()
	x := d.Quotas()
	if _, ok := x.Get(quota.Entity{User: quota.Named("stale")}); ok || x.Len() != 2 {
		t.Fatalf("after install: %+v", x.All())
	}
	if v, _ := x.Get(quota.Entity{User: quota.Default, ClientID: quota.Default}); v[quota.RequestPercentage] != 12.5 {
		t.Fatalf("after install: %+v", x.All())
	}
	// And a clean restart after the install keeps them (checkpoint).
	d.Close()
	d = openTestStore(t, dst)
	if d.Quotas().Len() != 2 {
		t.Fatalf("after restart: %+v", d.Quotas().All())
	}
}
