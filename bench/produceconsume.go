package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// produceConsume produces fixed-size records into a fresh topic, then
// consumes all of them back.
type produceConsume struct {
	name      string
	valueSize int
	opts      Options
}

func (w *produceConsume) Name() string { return w.name }

func (w *produceConsume) Run(ctx context.Context, addr string) (Result, error) {
	seeds := strings.Split(addr, ",")
	topic := fmt.Sprintf("bench-%s-%d", w.name, time.Now().UnixNano())
	if err := createTopic(ctx, seeds, topic, w.opts); err != nil {
		return Result{}, err
	}
	defer deleteTopic(seeds, topic, w.opts)

	prod, total, err := produce(ctx, seeds, topic, w.valueSize, w.opts)
	if err != nil {
		return Result{}, fmt.Errorf("produce: %w", err)
	}
	cons, err := consume(ctx, seeds, topic, total, w.opts)
	if err != nil {
		return Result{}, fmt.Errorf("consume: %w", err)
	}
	return Result{Produce: prod, Consume: cons}, nil
}
