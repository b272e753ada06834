package broker

import "github.com/brokerd/brokerd/broker/fetchsession"

// fetchTopicNames resolves the topic IDs a Fetch (v13+) reads, and only
// those: nil before v13, where partitions name their topic.
func (b *Broker) fetchTopicNames(version int16, parts []fetchsession.Partition) map[[16]byte]string {
	if version < 13 {
		return nil
	}
	names := map[[16]byte]string{}
	var last [16]byte
	for i, p := range parts {
		if i > 0 && p.ID == last {
			continue
		}
		last = p.ID
		if _, done := names[p.ID]; done {
			continue
		}
		if name, ok := b.topicNameByID(p.ID); ok {
			names[p.ID] = name
		}
	}
	return names
}
