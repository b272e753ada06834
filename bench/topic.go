package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// createTopic creates a fresh topic through the admin API.
func createTopic(ctx context.Context, seeds []string, topic string, o Options) error {
	adm, err := kadm.NewOptClient(clientOpts(seeds, o)...)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer adm.Close()
	resp, err := adm.CreateTopic(ctx, int32(o.Partitions), int16(o.Replication), nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// deleteTopic removes the run's topic, best effort, so that repeated runs
// against an external broker do not pile up data. Errors are ignored: the
// in-process targets are thrown away anyway.
func deleteTopic(seeds []string, topic string, o Options) {
	if o.KeepTopics {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm, err := kadm.NewOptClient(clientOpts(seeds, o)...)
	if err != nil {
		return
	}
	defer adm.Close()
	_, _ = adm.DeleteTopic(ctx, topic)
}
