package raftstore

import (
	"sync"
	"time"
)

// refusalInterval is how often a refused raft connection is logged for
// one reason: a misconfigured peer, or a scanner, retries many times a
// second.
const refusalInterval = 10 * time.Second

// refusalLog lets one refused-connection log line per reason through per
// refusalInterval and counts the ones it holds back.
type refusalLog struct {
	mu      sync.Mutex
	reasons map[string]*refusalState
}

type refusalState struct {
	last       time.Time
	suppressed int
}

// maxRefusalReasons bounds the map: reasons are a few fixed hints.
const maxRefusalReasons = 64

// allow reports whether a refusal for reason may be logged at now and how
// many were suppressed since the last one logged.
func (r *refusalLog) allow(reason string, now time.Time) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reasons == nil || len(r.reasons) > maxRefusalReasons {
		r.reasons = map[string]*refusalState{}
	}
	st := r.reasons[reason]
	if st == nil {
		st = &refusalState{}
		r.reasons[reason] = st
	}
	if !st.last.IsZero() && now.Sub(st.last) < refusalInterval {
		st.suppressed++
		return false, 0
	}
	n := st.suppressed
	st.last, st.suppressed = now, 0
	return true, n
}
