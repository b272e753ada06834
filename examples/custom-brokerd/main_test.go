package main

import (
	"testing"

	"github.com/brokerd/brokerd/processor"
)

func TestUpper(t *testing.T) {
	var got string
	if err := (upper{}).Process(nil, processor.Record{Value: []byte("hi")}, func(r processor.Record) { got = string(r.Value) }); err != nil || got != "HI" {
		t.Fatalf("%q %v", got, err)
	}
}
