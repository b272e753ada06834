package fetchsession

// Throttled is the session id and top-level error of the empty response a
// throttled Fetch gets (Kafka's FetchContext.getThrottledResponse). The
// session learns nothing of what was read, so the partitions are answered
// again by the next fetch; a full fetch opens no session.
func (x *Context) Throttled() (sessionID int32, code int16) {
	switch x.kind {
	case failed:
		return invalidSessionID, x.err
	case incremental:
		s := x.sess
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.epoch != x.expected {
			return s.id, errInvalidEpoch
		}
		return s.id, 0
	}
	return invalidSessionID, 0
}
