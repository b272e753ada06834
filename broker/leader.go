package broker

import "github.com/twmb/franz-go/pkg/kerr"

// leaderCheck is the error code for serving a leader-only read on a
// partition: unknown partition, not the leader, or a client whose idea of
// the leader epoch is behind (fenced) or ahead (unknown) of ours. 0 means
// serve it. requested is the client's CurrentLeaderEpoch, -1 for "no
// check".
func leaderCheck(known, leader bool, requested, current int32) int16 {
	switch {
	case !known:
		return kerr.UnknownTopicOrPartition.Code
	case !leader:
		return kerr.NotLeaderForPartition.Code
	case requested >= 0 && requested < current:
		return kerr.FencedLeaderEpoch.Code
	case requested > current:
		return kerr.UnknownLeaderEpoch.Code
	}
	return 0
}
