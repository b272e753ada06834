package raftstore

import (
	"encoding/json"
	"testing"
)

func TestBrokerInfoOn(t *testing.T) {
	b := BrokerInfo{NodeID: 1, Host: "plain", Port: 9092, Listeners: []Endpoint{
		{Listener: "PLAINTEXT", Host: "plain", Port: 9092},
		{Listener: "SSL", Host: "secure", Port: 9093},
	}}
	if got, ok := b.On("SSL"); !ok || got.Host != "secure" || got.Port != 9093 {
		t.Errorf("SSL: %+v %v", got, ok)
	}
	if got, ok := b.On("PLAINTEXT"); !ok || got.Host != "plain" || got.Port != 9092 {
		t.Errorf("PLAINTEXT: %+v %v", got, ok)
	}
	if _, ok := b.On("OTHER"); ok {
		t.Error("a listener the node does not have was found")
	}
	old := BrokerInfo{NodeID: 2, Host: "old", Port: 1}
	if got, ok := old.On("SSL"); !ok || got.Host != "old" {
		t.Errorf("a node without listeners: %+v %v", got, ok)
	}
	if !b.Equal(b) || b.Equal(old) {
		t.Error("Equal")
	}

	// An older node reads a newer one's registration (unknown fields are
	// ignored) and a newer one reads an older one's.
	data, _ := json.Marshal(b)
	var older struct {
		NodeID int32  `json:"node_id"`
		Host   string `json:"host"`
		Port   int32  `json:"port"`
	}
	if err := json.Unmarshal(data, &older); err != nil || older.Host != "plain" || older.Port != 9092 {
		t.Errorf("older reader: %+v %v", older, err)
	}
	var newer BrokerInfo
	if err := json.Unmarshal([]byte(`{"node_id":2,"host":"old","port":1}`), &newer); err != nil || !newer.Equal(old) {
		t.Errorf("newer reader: %+v %v", newer, err)
	}
}
