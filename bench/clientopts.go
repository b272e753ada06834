package main

import (
	"os"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Kafka API keys the benchmark looks at.
const (
	apiKeyProduce = 0
	apiKeyFetch   = 1
)

// clientOpts are the options every franz-go client in the benchmark shares.
func clientOpts(seeds []string, o Options) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...)}
	if o.Verbose {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil)))
	}
	if o.MaxProduceV >= 0 {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(apiKeyProduce, int16(o.MaxProduceV))
		opts = append(opts, kgo.MaxVersions(vs))
	}
	return opts
}
