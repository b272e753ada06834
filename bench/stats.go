package main

import (
	"slices"
	"sort"
	"time"
)

func sortDurations(d []time.Duration) { slices.Sort(d) }

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted
// durations; 0 for none.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted)) + 0.999999999)
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// Summary is the median of every figure over the runs of one workload on
// one target.
type Summary struct {
	Workload    string  `json:"workload"`
	Target      string  `json:"target"`
	Runs        int     `json:"runs"`
	ProduceRecS float64 `json:"produce_records_per_s"`
	ProduceMiBS float64 `json:"produce_mib_per_s"`
	P50ms       float64 `json:"produce_p50_ms"`
	P99ms       float64 `json:"produce_p99_ms"`
	ConsumeRecS float64 `json:"consume_records_per_s"`
	ConsumeMiBS float64 `json:"consume_mib_per_s"`
	// The server's CPU seconds per GiB produced and per GiB served (0 when
	// the server is not a process of the bench's own).
	ProduceCPUGiB float64 `json:"produce_server_cpu_s_per_gib,omitempty"`
	ConsumeCPUGiB float64 `json:"consume_server_cpu_s_per_gib,omitempty"`
	// Per request, from franz-go's BrokerE2E hook.
	ProduceReqs  float64 `json:"produce_requests"`
	ProduceReqKB float64 `json:"produce_request_kib"`
	ProduceReq50 float64 `json:"produce_request_p50_ms"`
	ProduceReq99 float64 `json:"produce_request_p99_ms"`
	FetchReqs    float64 `json:"fetch_requests"`
	FetchRespKB  float64 `json:"fetch_response_kib"`
	FetchReq50   float64 `json:"fetch_request_p50_ms"`
}

// summarize turns one run into the figures a Summary holds.
func summarize(r Run) Summary {
	return Summary{
		Workload:    r.Workload,
		Target:      r.Target,
		Runs:        1,
		ProduceRecS: r.Produce.RecordsPerSec(),
		ProduceMiBS: r.Produce.MiBPerSec(),
		P50ms:       ms(r.Produce.P50),
		P99ms:       ms(r.Produce.P99),
		ConsumeRecS: r.Consume.RecordsPerSec(),
		ConsumeMiBS: r.Consume.MiBPerSec(),

		ProduceCPUGiB: r.Produce.ServerCPUPerGiB(),
		ConsumeCPUGiB: r.Consume.ServerCPUPerGiB(),

		ProduceReqs:  float64(r.Produce.Requests.Count),
		ProduceReqKB: perKiB(r.Produce.Requests.BytesOut, r.Produce.Requests.Count),
		ProduceReq50: ms(r.Produce.Requests.P50),
		ProduceReq99: ms(r.Produce.Requests.P99),
		FetchReqs:    float64(r.Consume.Requests.Count),
		FetchRespKB:  perKiB(r.Consume.Requests.BytesIn, r.Consume.Requests.Count),
		FetchReq50:   ms(r.Consume.Requests.P50),
	}
}

// perKiB is bytes per request in KiB.
func perKiB(bytes, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(bytes) / float64(n) / 1024
}

// medians groups runs by workload and target, keeping first-seen order,
// and takes the median of each figure separately.
func medians(runs []Run) []Summary {
	type key struct{ w, t string }
	var order []key
	groups := map[key][]Summary{}
	for _, r := range runs {
		k := key{r.Workload, r.Target}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], summarize(r))
	}
	var out []Summary
	for _, k := range order {
		g := groups[k]
		col := func(f func(Summary) float64) float64 {
			xs := make([]float64, len(g))
			for i, s := range g {
				xs[i] = f(s)
			}
			return median(xs)
		}
		out = append(out, Summary{
			Workload:    k.w,
			Target:      k.t,
			Runs:        len(g),
			ProduceRecS: col(func(s Summary) float64 { return s.ProduceRecS }),
			ProduceMiBS: col(func(s Summary) float64 { return s.ProduceMiBS }),
			P50ms:       col(func(s Summary) float64 { return s.P50ms }),
			P99ms:       col(func(s Summary) float64 { return s.P99ms }),
			ConsumeRecS: col(func(s Summary) float64 { return s.ConsumeRecS }),
			ConsumeMiBS: col(func(s Summary) float64 { return s.ConsumeMiBS }),

			ProduceCPUGiB: col(func(s Summary) float64 { return s.ProduceCPUGiB }),
			ConsumeCPUGiB: col(func(s Summary) float64 { return s.ConsumeCPUGiB }),

			ProduceReqs:  col(func(s Summary) float64 { return s.ProduceReqs }),
			ProduceReqKB: col(func(s Summary) float64 { return s.ProduceReqKB }),
			ProduceReq50: col(func(s Summary) float64 { return s.ProduceReq50 }),
			ProduceReq99: col(func(s Summary) float64 { return s.ProduceReq99 }),
			FetchReqs:    col(func(s Summary) float64 { return s.FetchReqs }),
			FetchRespKB:  col(func(s Summary) float64 { return s.FetchRespKB }),
			FetchReq50:   col(func(s Summary) float64 { return s.FetchReq50 }),
		})
	}
	return out
}

// ratio is a/b for each figure: the target over its peer.
func ratio(a, b Summary) Summary {
	div := func(x, y float64) float64 {
		if y == 0 {
			return 0
		}
		return x / y
	}
	return Summary{
		Workload:    a.Workload,
		Target:      a.Target + "/" + b.Target,
		ProduceRecS: div(a.ProduceRecS, b.ProduceRecS),
		ProduceMiBS: div(a.ProduceMiBS, b.ProduceMiBS),
		P50ms:       div(a.P50ms, b.P50ms),
		P99ms:       div(a.P99ms, b.P99ms),
		ConsumeRecS: div(a.ConsumeRecS, b.ConsumeRecS),
		ConsumeMiBS: div(a.ConsumeMiBS, b.ConsumeMiBS),

		ProduceCPUGiB: div(a.ProduceCPUGiB, b.ProduceCPUGiB),
		ConsumeCPUGiB: div(a.ConsumeCPUGiB, b.ConsumeCPUGiB),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
