package node

import (
	"testing"

	"github.com/brokerd/brokerd/raftstore"
)

func TestRegistered(t *testing.T) {
	self := raftstore.BrokerInfo{NodeID: 1, Host: "h", Port: 1, Listeners: []raftstore.Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 1}, {Listener: "SSL", Host: "h", Port: 2}}}
	if !registered(self, self, 0) {
		t.Error("the same registration")
	}
	older := self
	older.Listeners = nil
	if !registered(older, self, 1) || registered(older, self, 30) {
		t.Error("a registration an older leader stripped of listeners: counts, asked again every 30th pass")
	}
	moved := self
	moved.Port = 3
	if registered(moved, self, 1) {
		t.Error("a different address counts as registered")
	}
}
