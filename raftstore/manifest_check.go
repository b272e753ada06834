package raftstore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/brokerd/brokerd/topic"
)

// MaxIDBytes bounds a group id or a transactional id that the state keeps,
// well below bbolt's 32 KiB key limit, so writing the state cannot fail on
// a key. The broker refuses longer ids when they arrive (Kafka sets no
// limit; no client comes near it), and a manifest holding one is refused.
const MaxIDBytes = 16 << 10

// decodeManifest decodes and validates a manifest.
func decodeManifest(raw []byte) (*manifest, error) {
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: decode manifest: %w", errBadSnapshot, err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// validate checks a manifest received from another node before anything is
// written from it: every partition key names a valid topic of the manifest
// and one of its partitions, every partition of every topic is described,
// and the segments are ordered and bounded. A manifest that fails is
// refused whole: installing part of it would leave a node that cannot start
// (a bad key panicked at every restart) or write outside the data directory.
func (m *manifest) validate() error {
	counts := make(map[string]int32, len(m.Topics))
	total := 0
	for _, t := range m.Topics {
		if err := t.Validate(); err != nil {
			return fmt.Errorf("%w: %w", errBadSnapshot, err)
		}
		if t.Partitions > maxPartitions {
			return fmt.Errorf("%w: topic %s has %d partitions (at most %d)", errBadSnapshot, t.Name, t.Partitions, maxPartitions)
		}
		if _, dup := counts[t.Name]; dup {
			return fmt.Errorf("%w: topic %s listed twice", errBadSnapshot, t.Name)
		}
		counts[t.Name] = t.Partitions
		total += int(t.Partitions)
	}
	if len(m.Partitions) != total {
		return fmt.Errorf("%w: %d partitions described for topics with %d", errBadSnapshot, len(m.Partitions), total)
	}
	for key, mp := range m.Partitions {
		name, idx, err := parsePartKey(key)
		if err != nil {
			return err
		}
		if n, ok := counts[name]; !ok || idx >= n {
			return fmt.Errorf("%w: partition %q of no topic in the manifest", errBadSnapshot, key)
		}
		if err := mp.validate(); err != nil {
			return fmt.Errorf("partition %s: %w", key, err)
		}
	}
	if err := validateScramUsage(m.Scram); err != nil {
		return err
	}
	if err := validateScramBoot(m.ScramBootstrapped); err != nil {
		return err
	}
	for i := range m.Scram {
		if err := CheckScramCredential(&m.Scram[i]); err != nil {
			return fmt.Errorf("%w: SCRAM credential %d: %w", errBadSnapshot, i, err)
		}
	}
	for group, data := range m.GroupMembers {
		c := groupMembersCmd{Records: []GroupMembers{{Group: group, Data: data}}}
		if err := c.validate(); err != nil || data == nil {
			return fmt.Errorf("%w: membership record of group %.64q: %v", errBadSnapshot, group, err)
		}
	}
	for group, offs := range m.Groups {
		if len(group) > MaxIDBytes {
			return fmt.Errorf("%w: group id of %d bytes", errBadSnapshot, len(group))
		}
		for _, o := range offs {
			if len(o.Topic) > topic.MaxNameLen {
				return fmt.Errorf("%w: group %.64q commits to a topic name of %d bytes", errBadSnapshot, group, len(o.Topic))
			}
		}
	}
	for _, t := range m.Txns {
		if t == nil || len(t.ID) == 0 || len(t.ID) > MaxIDBytes {
			return fmt.Errorf("%w: a transaction without a valid id", errBadSnapshot)
		}
	}
	for _, p := range m.Producers {
		if p == nil {
			return fmt.Errorf("%w: an empty producer", errBadSnapshot)
		}
	}
	if err := m.validateACLs(); err != nil {
		return err
	}
	if err := m.validateQuotas(); err != nil {
		return err
	}
	return m.validateProcessors()
}

func (mp *manifestPartition) validate() error {
	if mp.StartOffset < 0 || mp.EndOffset < mp.StartOffset {
		return fmt.Errorf("%w: offsets %d..%d", errBadSnapshot, mp.StartOffset, mp.EndOffset)
	}
	prev := int64(-1)
	for _, s := range mp.Segments {
		if s.BaseOffset <= prev || s.NextOffset < s.BaseOffset || s.Size < 0 || s.Size > maxSnapFileBytes {
			return fmt.Errorf("%w: segment at %d (next %d, %d bytes) after %d", errBadSnapshot, s.BaseOffset, s.NextOffset, s.Size, prev)
		}
		prev = s.BaseOffset
	}
	return nil
}

// parsePartKey undoes partKey, refusing anything partKey cannot produce.
func parsePartKey(k string) (string, int32, error) {
	i := strings.LastIndexByte(k, '/')
	if i < 0 {
		return "", 0, fmt.Errorf("%w: partition key %q", errBadSnapshot, k)
	}
	n, err := strconv.ParseUint(k[i+1:], 10, 31)
	if err != nil || strconv.FormatUint(n, 10) != k[i+1:] {
		return "", 0, fmt.Errorf("%w: partition key %q", errBadSnapshot, k)
	}
	if err := topic.ValidateName(k[:i]); err != nil {
		return "", 0, fmt.Errorf("%w: partition key %q: %w", errBadSnapshot, k, err)
	}
	return k[:i], int32(n), nil
}
