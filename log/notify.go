package log

// Notify returns a channel that is closed by the next successful Append
// (or by Close). To wait for data past offset o without missing a wake-up,
// take the channel first, then check EndOffset, then wait.
func (l *Log) Notify() <-chan struct{} {
	ch := *l.notifyCh.Load()
	l.notifyWanted.Store(true)
	return ch
}

// wake closes the current notify channel if anyone has asked for it.
func (l *Log) wake() {
	if !l.notifyWanted.Swap(false) {
		return
	}
	ch := make(chan struct{})
	close(*l.notifyCh.Swap(&ch))
}
