package wire

// ticketBytes returns what a frame of size bytes with api key key is
// charged when it is admitted, before its buffer is allocated: the frame
// and the most that decoding it may allocate, so that nothing is charged
// later and a frame never waits while it holds budget. After decoding the
// ticket shrinks to what the request holds (see dispatch).
//
// Produce: the frame plus the decode room checkProduceCost enforces
// (produceRoom). Its records alias the frame. Anything else:
// decodeAmplification times the frame (capped at MaxOtherBytes, 1 MiB by
// default).
func ticketBytes(key int16, size int32) int64 {
	if key == apiKeyProduce {
		return int64(size) + produceRoom(int(size))
	}
	return int64(size) * decodeAmplification
}

// maxProduceDecodeRoom caps the decode room of a large Produce frame: its
// topic and partition structs (about 100 bytes a partition) must fit in
// it, which holds tens of thousands of partitions. Without the cap a
// 100 MiB frame would be charged 300 MiB while it arrives, so that one
// slow producer could hold the whole default budget.
const maxProduceDecodeRoom = 8 << 20

// produceRoom is what decoding a Produce frame of size bytes may allocate.
func produceRoom(size int) int64 {
	return min(int64(size)*produceCostFactor, maxProduceDecodeRoom) + produceCostSlack
}

// produceDecodeRoom is what a Produce frame of size bytes admitted with a
// ticket of n bytes may allocate to decode: the usual limit, or less when
// the ticket was clamped to the budget. A frame larger than the whole
// budget (which proceeds alone) still gets produceCostSlack.
func produceDecodeRoom(size int, n int64) int64 {
	return max(min(produceRoom(size), n-int64(size)), produceCostSlack)
}
