package processor

// partitionFor picks an output partition the way Kafka's default
// partitioner does for a keyed record (murmur2 of the key, made positive,
// modulo the partition count), so consumers that expect Kafka's placement
// find keys where they look; an unkeyed record keeps its input partition
// (modulo the count).
func partitionFor(key []byte, inputPartition int32, n int32) int32 {
	if n <= 0 {
		return 0
	}
	if key == nil {
		return inputPartition % n
	}
	return int32(murmur2(key)&0x7fffffff) % n
}

// murmur2 is the 32-bit MurmurHash2 with Kafka's seed, as Kafka's
// Utils.murmur2 computes it.
func murmur2(data []byte) uint32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	length := len(data)
	h := uint32(seed) ^ uint32(length)
	for i := 0; i+4 <= length; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := length &^ 3
	switch length & 3 {
	case 3:
		h ^= uint32(data[tail+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[tail+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[tail])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
