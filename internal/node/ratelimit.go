package node

import (
	"sync"
	"time"
)

// logLimiter lets at most burst log lines per key through in each window,
// and counts the ones it holds back so the next line can say how many.
type logLimiter struct {
	window time.Duration
	burst  int
	now    func() time.Time

	mu   sync.Mutex
	keys map[string]*limitState
}

type limitState struct {
	start      time.Time
	n          int
	suppressed int
}

// maxLimitKeys bounds the limiter's memory; keys are API and error names,
// so the bound is only reached by a bug, and then the map starts over.
const maxLimitKeys = 4096

func newLogLimiter(window time.Duration, burst int) *logLimiter {
	return &logLimiter{window: window, burst: burst, now: time.Now, keys: map[string]*limitState{}}
}

// allow reports whether a line for key may be logged now and, if so, how
// many lines for key were suppressed since the last one.
func (l *logLimiter) allow(key string) (bool, int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.keys[key]
	if st == nil {
		if len(l.keys) >= maxLimitKeys {
			l.keys = map[string]*limitState{}
		}
		st = &limitState{start: now}
		l.keys[key] = st
	}
	if now.Sub(st.start) >= l.window {
		st.start, st.n = now, 0
	}
	if st.n >= l.burst {
		st.suppressed++
		return false, 0
	}
	st.n++
	s := st.suppressed
	st.suppressed = 0
	return true, s
}
