package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkTxnGroupMember checks a TxnOffsetCommit's group member and
// generation (v3+, KIP-447) with the group coordinator, so a zombie from an
// older generation cannot commit. Without member information (older
// clients, or a producer that sends offsets for a group it is not in) there
// is nothing to check, as in Kafka.
func (b *Broker) checkTxnGroupMember(r *kmsg.TxnOffsetCommitRequest) error {
	if r.Version < 3 || r.Generation < 0 && r.MemberID == "" && r.InstanceID == nil {
		return nil
	}
	hasOffsets := func() bool { return len(b.store.GroupOffsets(r.Group)) > 0 }
	if e := b.groups.ValidateCommit(r.Group, r.Generation, r.MemberID, r.InstanceID, hasOffsets); e != nil {
		return e
	}
	return nil
}
