package raftstore

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"
)

// TransferLeadership hands raft leadership to another voter and waits until
// it has moved or ctx ends. It returns nil at once when this node does not
// lead or is the only voter.
func (s *Store) TransferLeadership(ctx context.Context) error {
	if s.raft.State() != raft.Leader {
		return nil
	}
	if s.voters() < 2 {
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- s.raft.LeadershipTransfer().Error() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("raft leadership transfer: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("raft leadership transfer: %w", ctx.Err())
	}
}
