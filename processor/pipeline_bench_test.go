package processor

import (
	"fmt"
	"testing"
)

// BenchmarkPipelineQ1 runs Nexmark q1's stages (filter bids, price to
// euros) over bid records: the stages' own cost per record, without the
// store.
func BenchmarkPipelineQ1(b *testing.B) {
	p := compileStages(b, Stage{Filter: `value.type == "bid"`},
		Stage{Map: &MapSpec{Value: `{"auction": value.auction, "bidder": value.bidder, "price": value.price * 0.908, "ts": value.ts}`}})
	recs := make([]Record, 1000)
	for i := range recs {
		recs[i] = Record{Value: fmt.Appendf(nil, `{"type":"bid","auction":%d,"bidder":%d,"price":%d,"ts":%d}`, i%97, i, 1+i%10000, i), Topic: "in"}
	}
	st := newStepState(memState{}.get, memState{}.scan)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.run(st, 0, recs[i%len(recs)], func(Record) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
