package raftstore

// crashForTest stops the store the way a kill -9 would leave it: raft stops
// and files close, but no final checkpoint is written.
func (s *Store) crashForTest() {
	s.closeMu.Lock()
	s.isClosed = true
	s.closeMu.Unlock()
	close(s.stop)
	_ = s.raft.Shutdown().Error()
	s.wg.Wait()
	_ = s.closeAll()
}
