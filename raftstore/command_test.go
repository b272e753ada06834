package raftstore

import (
	"bytes"
	"errors"
	"testing"

	"github.com/brokerd/brokerd/internal/batchtest"
)

func TestProduceCommandRoundTrip(t *testing.T) {
	plain := batchtest.New(batchtest.NoProducer, []byte("v"))
	txn := batchtest.New(batchtest.Options{ProducerID: 7, Transactional: true}, []byte("v"))
	tests := []struct {
		name string
		cmd  produceCmd
		// want is the type written: cmdProduce, which older nodes read,
		// unless the request has a transactional id or batch.
		want cmdType
	}{
		{"empty", produceCmd{Now: 1}, cmdProduce},
		{"plain batch", produceCmd{Now: 1700000000000, Batches: []ProduceBatch{{Topic: "a", Data: plain}}}, cmdProduce},
		{"transactional id", produceCmd{Now: 1, TxnID: "billing-tx", Batches: []ProduceBatch{{Topic: "a", Data: plain}}}, cmdProduceTxn},
		{"transactional batch without an id", produceCmd{Now: 1, Batches: []ProduceBatch{{Topic: "a", Data: plain}, {Topic: "b", Data: txn}}}, cmdProduceTxn},
		{"unreadable batch", produceCmd{Now: 1700000000000, Batches: []ProduceBatch{{Topic: "a", Partition: 0, Data: []byte("xyz")}}}, cmdProduceTxn},
		{"several", produceCmd{Now: -1, Batches: []ProduceBatch{
			{Topic: "orders", Partition: 7, Data: bytes.Repeat([]byte{1}, 1000)},
			{Topic: "o", Partition: 2147483647, Data: []byte{}},
		}}, cmdProduceTxn},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf := encodeProduce(&tc.cmd)
			if cmdType(buf[0]) != tc.want {
				t.Fatalf("type byte %d, want %d", buf[0], tc.want)
			}
			got, err := decodeProduce(buf)
			if err != nil {
				t.Fatal(err)
			}
			if got.Now != tc.cmd.Now || got.TxnID != tc.cmd.TxnID || got.Legacy != (tc.want == cmdProduce) || len(got.Batches) != len(tc.cmd.Batches) {
				t.Fatalf("got %+v, want %+v", got, tc.cmd)
			}
			for i, b := range got.Batches {
				w := tc.cmd.Batches[i]
				if b.Topic != w.Topic || b.Partition != w.Partition || !bytes.Equal(b.Data, w.Data) {
					t.Fatalf("batch %d: got %+v, want %+v", i, b, w)
				}
			}
		})
	}
}

func TestProduceCommandRejectsDamage(t *testing.T) {
	good := encodeProduce(&produceCmd{Now: 5, Batches: []ProduceBatch{{Topic: "t", Partition: 1, Data: []byte("abcdef")}}})
	for cut := 1; cut < len(good); cut++ {
		if _, err := decodeProduce(good[:cut]); !errors.Is(err, ErrInvalidCommand) {
			t.Fatalf("truncated at %d: err %v", cut, err)
		}
	}
	if _, err := decodeProduce(append(append([]byte(nil), good...), 0)); !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("trailing byte: err %v", err)
	}
}

func FuzzDecodeProduce(f *testing.F) {
	f.Add(encodeProduce(&produceCmd{Now: 5, Batches: []ProduceBatch{{Topic: "t", Partition: 1, Data: []byte("abcdef")}}}))
	f.Add(encodeProduce(&produceCmd{}))
	f.Add(encodeProduce(&produceCmd{Now: 5, TxnID: "tx", Batches: []ProduceBatch{{Topic: "t", Data: []byte("a")}}}))
	f.Add(encodeProduce(&produceCmd{Legacy: true, Now: 5, Batches: []ProduceBatch{{Topic: "t", Data: []byte("a")}}}))
	f.Add([]byte{byte(cmdProduce), 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		c, err := decodeProduce(data)
		if err != nil {
			return
		}
		// Whatever decodes must re-encode to the same bytes.
		if again := encodeProduce(c); !bytes.Equal(again, data) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, data)
		}
	})
}

func TestChunkBatches(t *testing.T) {
	mk := func(sizes ...int) []ProduceBatch {
		var out []ProduceBatch
		for _, s := range sizes {
			out = append(out, ProduceBatch{Data: make([]byte, s)})
		}
		return out
	}
	tests := []struct {
		name  string
		sizes []int
		want  []int // batches per chunk
	}{
		{"one small", []int{10}, []int{1}},
		{"fits", []int{maxEntryBytes / 2, maxEntryBytes / 2}, []int{2}},
		{"splits", []int{maxEntryBytes / 2, maxEntryBytes/2 + 1, 5}, []int{1, 2}},
		{"huge alone", []int{1, maxEntryBytes + 1, 1}, []int{1, 1, 1}},
	}
	for _, tc := range tests {
		got := chunkBatches(mk(tc.sizes...))
		var counts []int
		for _, c := range got {
			counts = append(counts, len(c))
		}
		if len(counts) != len(tc.want) {
			t.Fatalf("%s: chunks %v, want %v", tc.name, counts, tc.want)
		}
		for i := range counts {
			if counts[i] != tc.want[i] {
				t.Fatalf("%s: chunks %v, want %v", tc.name, counts, tc.want)
			}
		}
	}
}
