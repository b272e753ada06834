package raftstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/brokerd/brokerd/topic"
)

// Store is a node's raft group member: raft, its stores, and the FSM.
type Store struct {
	cfg    Config
	logger *slog.Logger
	fsm    *fsm
	// wal is raft's log store when it is raft-wal (nil with boltdb).
	wal *walStore
	// props bounds the bytes proposed and not yet applied.
	props *proposals
	// snaps is raft\'s snapshot store.
	snaps *snapshotStore
	raft  *raft.Raft
	trans *raft.NetworkTransport
	// raftRef is raft for its own goroutines, which start before
	// startRaft sets s.raft (the dial address provider).
	raftRef atomic.Pointer[raft.Raft]
	// held is what this node holds for a leader's snapshot (hold.go).
	held *holdSet
	logs raft.LogStore
	// readyTerm is the term in which this node confirmed its leadership
	// (confirmLeadership); IsLeader compares it with the current term.
	readyTerm atomic.Uint64
	// snapNow asks the background loop for a snapshot at once.
	snapNow chan struct{}
	// verified is set, and verifiedCh closed, once background
	// verification has checked every partition log (verify.go).
	verified   atomic.Bool
	verifiedCh chan struct{}
	// contacts tracks peers whose heartbeats fail (isr.go).
	contacts contactTracker
	closer   []io.Closer
	lock     *dirLock

	stop     chan struct{}
	wg       sync.WaitGroup
	closeMu  sync.Mutex
	isClosed bool
}

// Open recovers the FSM from its checkpoint, starts raft and, on a fresh
// data directory, bootstraps the group.
func Open(cfg Config) (*Store, error) {
	cfg.setDefaults()
	s := &Store{cfg: cfg, logger: cfg.Logger.With("component", "raftstore"), stop: make(chan struct{}), snapNow: make(chan struct{}, 1), props: newProposals(cfg.MaxProposalBytes)}
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, "raft"), 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	lock, err := lockDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	s.lock = lock
	if err := checkDamageMarker(cfg.DataDir); err != nil {
		lock.Close()
		return nil, err
	}
	f, err := openFSM(cfg.DataDir, s.logger)
	if err != nil {
		lock.Close()
		return nil, err
	}
	s.fsm = f
	f.stop = s.stop
	if err := s.startRaft(); err != nil {
		s.closeAll()
		return nil, err
	}
	s.contacts.failing = map[int32]time.Time{}
	s.startVerify()
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		s.watchSpace()
	}()
	go s.background()
	go func() {
		defer s.wg.Done()
		s.watchContacts()
	}()
	return s, nil
}

func openFSM(dataDir string, logger *slog.Logger) (*fsm, error) {
	if err := checkStateFile(filepath.Join(dataDir, "brokerd-state.db")); err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(dataDir, "brokerd-state.db"), 0o644, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open state db: %w", err)
	}
	f := &fsm{
		logger:    logger,
		dataDir:   dataDir,
		db:        db,
		defaults:  topic.Defaults{},
		topics:    map[string]*topicState{},
		topicIDs:  map[[16]byte]string{},
		brokers:   map[int32]BrokerInfo{},
		groups:    map[string]groupOffsets{},
		scram:     map[ScramKey]ScramCredential{},
		deleted:   map[string]int64{},
		txns:      map[string]*TxnState{},
		producers: map[int64]*producerState{},
		procs:     newProcTable(),
		notifyCh:  make(chan struct{}),
		failCh:    make(chan struct{}),
		ckptDone:  make(chan error, 1),
	}
	f.dirty.reset()
	start := time.Now()
	if err := f.resumeInstall(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("recover state: %w", err)
	}
	if err := f.installReceived(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("recover state: %w", err)
	}
	if err := f.loadCheckpoint(); err != nil {
		f.closeLogs()
		_ = db.Close()
		return nil, fmt.Errorf("recover state: %w", err)
	}
	f.appliedIndex.Store(f.applied)
	if err := f.removeStrayDirs(); err != nil {
		f.closeLogs()
		_ = db.Close()
		return nil, err
	}
	logger.Info("state recovered", "applied_index", f.applied, "topics", len(f.topics), "took", time.Since(start))
	return f, nil
}

// removeStrayDirs deletes partition directories the checkpoint does not
// know: they belong to topics created after it, which raft replays.
func (f *fsm) removeStrayDirs() error {
	ents, err := os.ReadDir(f.dataDir)
	if err != nil {
		return fmt.Errorf("read data dir: %w", err)
	}
	known := map[string]bool{}
	for _, ts := range f.topics {
		for i := int32(0); i < ts.meta.Partitions; i++ {
			known[partKey(ts.meta.Name, i)] = true
		}
	}
	for _, e := range ents {
		if !e.IsDir() || !isPartitionDir(e.Name()) {
			continue
		}
		name := e.Name()
		i := len(name) - 1
		for name[i] != '-' {
			i--
		}
		idx, _ := strconv.Atoi(name[i+1:])
		if known[partKey(name[:i], int32(idx))] {
			continue
		}
		f.logger.Info("removing partition dir not covered by the checkpoint", "dir", name)
		if err := os.RemoveAll(filepath.Join(f.dataDir, name)); err != nil {
			return fmt.Errorf("remove stray dir %s: %w", name, err)
		}
	}
	return nil
}

func (s *Store) startRaft() error {
	cfg := s.cfg
	rdir := filepath.Join(cfg.DataDir, "raft")
	hl := newHCLogger("raft", cfg.Logger)

	var logs raft.LogStore
	var ws *walStore
	seg := 0
	switch cfg.LogStore {
	case "wal":
		if err := os.MkdirAll(filepath.Join(rdir, "wal"), 0o755); err != nil {
			return fmt.Errorf("create raft wal dir: %w", err)
		}
		seg = walSegmentSize(cfg.WALSegmentBytes, rdir)
		cfg.Logger.Info("raft-wal segment size", "bytes", seg)
		w, err := openWALStore(filepath.Join(rdir, "wal"), seg, s.logger, newHCLogger("raft-wal", cfg.Logger))
		if err != nil {
			return err
		}
		s.closer = append(s.closer, w)
		logs = w
		ws = w
	case "boltdb":
		b, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(rdir, "raft-log.db")})
		if err != nil {
			return fmt.Errorf("open raft log db: %w", err)
		}
		s.closer = append(s.closer, b)
		logs = b
	default:
		return fmt.Errorf("unknown raft log store %q (want wal or boltdb)", cfg.LogStore)
	}
	total, _ := filesystemBytes(cfg.DataDir)
	reserve := reserveFor(cfg.MinFreeBytes, total, seg)
	s.fsm.space = newSpaceGuard(cfg.DataDir, reserve, s.logger)
	if ws != nil {
		ws.space, ws.stop = s.fsm.space, s.stop
		s.wal = ws
	}
	s.logger.Info("disk space reserve", "min_free_bytes", reserve)
	stable, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(rdir, "stable.db")})
	if err != nil {
		return fmt.Errorf("open raft stable store: %w", err)
	}
	s.closer = append(s.closer, stable)
	fileSnaps, err := raft.NewFileSnapshotStoreWithLogger(rdir, 2, hl)
	if err != nil {
		return fmt.Errorf("open snapshot store: %w", err)
	}
	if err := removePins(cfg.DataDir); err != nil {
		return err
	}
	s.held = newHoldSet(cfg.DataDir)
	if err := s.held.clear(); err != nil {
		return err
	}
	snaps := &snapshotStore{inner: fileSnaps, dataDir: cfg.DataDir, held: s.held, logger: s.logger, stale: s.requestSnapshot, verify: s.verifyForShipping}
	s.snaps = snaps
	adv, err := net.ResolveTCPAddr("tcp", cfg.RaftAdvertise)
	if err != nil {
		return fmt.Errorf("resolve raft address %q: %w", cfg.RaftAdvertise, err)
	}
	stream, err := newStreamLayer(cfg.RaftAddr, adv, cfg.RaftTLS, s.logger.With("component", "raft"))
	if err != nil {
		return fmt.Errorf("raft transport on %s: %w", cfg.RaftAddr, err)
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 3, Timeout: 10 * time.Second, Logger: hl, ServerAddressProvider: dialProvider(cfg.RaftDial, s.configuredAddr),
	})
	s.trans = trans

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(strconv.Itoa(int(cfg.NodeID)))
	rc.Logger = hl
	rc.NoSnapshotRestoreOnStart = true
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.TrailingLogs = cfg.TrailingLogs
	rc.MaxAppendEntries = maxAppendEntries
	rc.BatchApplyCh = true
	if len(cfg.Peers) <= 1 && !cfg.Join {
		// A one-member group has nobody to wait for.
		rc.HeartbeatTimeout = 200 * time.Millisecond
		rc.ElectionTimeout = 200 * time.Millisecond
		rc.LeaderLeaseTimeout = 100 * time.Millisecond
	}

	s.logs = logs
	if err := dropLogBehindSnapshot(snaps, logs); err != nil {
		return err
	}
	if err := checkSnapshotGap(snaps, s.fsm.applied); err != nil {
		return err
	}
	// No raft.LogCache in front of logs: the FSM rewrites batch headers in
	// the applied entries' bytes (see fsm.produceOne).
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("inspect raft state: %w", err)
	}
	if !has && !cfg.Join {
		conf := raft.Configuration{}
		peers := cfg.Peers
		if len(peers) == 0 {
			peers = []Peer{{ID: cfg.NodeID, Addr: string(trans.LocalAddr())}}
		}
		for _, p := range peers {
			conf.Servers = append(conf.Servers, raft.Server{
				Suffrage: raft.Voter,
				ID:       raft.ServerID(strconv.Itoa(int(p.ID))),
				Address:  raft.ServerAddress(p.Addr),
			})
		}
		if err := raft.BootstrapCluster(rc, logs, stable, snaps, trans, conf); err != nil {
			return fmt.Errorf("bootstrap raft: %w", err)
		}
	}
	var rt raft.Transport = trans
	if cfg.AskHeld != nil {
		rt = &dedupTransport{NetworkTransport: trans, logger: s.logger, ask: cfg.AskHeld, stop: s.stop}
	}
	r, err := raft.NewRaft(rc, s.fsm, logs, stable, snaps, rt)
	if err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	s.raft = r
	s.raftRef.Store(r)
	return nil
}

// background runs the leader's periodic duties and the checkpoint ticker.
func (s *Store) background() {
	defer s.wg.Done()
	ckpt := time.NewTicker(s.cfg.CheckpointInterval)
	defer ckpt.Stop()
	ret := time.NewTicker(s.cfg.RetentionCheckInterval)
	defer ret.Stop()
	txnCheck := time.NewTicker(s.cfg.TxnTimeoutCheckInterval)
	defer txnCheck.Stop()
	expire := time.NewTicker(s.cfg.ProducerExpirationCheck)
	defer expire.Stop()
	leaderCh := s.raft.LeaderCh()
	snap := snapshotPolicy{bytes: s.fsm.appliedBytes.Load(), index: s.AppliedIndex(), at: time.Now()}
	for {
		select {
		case <-s.stop:
			return
		case now := <-ckpt.C:
			s.fsm.checkpointDue.Store(true)
			s.maybeSnapshot(&snap, now)
		case <-s.snapNow:
			snap.at = time.Time{} // due now, if anything was applied since
			s.maybeSnapshot(&snap, time.Now())
		case isLeader := <-leaderCh:
			if isLeader {
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					s.onLeader()
				}()
			}
		case now := <-expire.C:
			if s.IsLeader() {
				if err := s.ExpireProducers(context.Background(), now); err != nil {
					s.logger.Warn("producer expiry proposal failed", "err", err)
				}
				if err := s.pruneRegistrations(context.Background()); err != nil {
					s.logger.Warn("unregister removed brokers", "err", err)
				}
			}
		case now := <-txnCheck.C:
			if s.IsLeader() {
				s.abortTimedOut(context.Background(), now)
			}
		case <-ret.C:
			if s.IsLeader() {
				if err := s.proposeJSON(context.Background(), cmdRetention, retentionCmd{Now: time.Now().UnixMilli()}); err != nil {
					s.logger.Warn("retention proposal failed", "err", err)
				}
			}
		}
	}
}

// onLeader runs when this node wins an election.
func (s *Store) onLeader() {
	if err := s.confirmLeadership(); err != nil {
		s.logger.Warn("leader barrier failed", "err", err)
		return
	}
	if err := s.syncDefaults(context.Background()); err != nil {
		s.logger.Warn("topic defaults", "err", err)
	}
	if s.ClusterID() == "" && s.cfg.ClusterID != "" {
		if err := s.proposeJSON(context.Background(), cmdSetClusterID, setClusterIDCmd{ID: s.cfg.ClusterID}); err != nil {
			s.logger.Warn("set cluster id", "err", err)
		}
	}
	if err := s.pruneRegistrations(context.Background()); err != nil {
		s.logger.Warn("unregister removed brokers", "err", err)
	}
	s.fsm.mu.RLock()
	cur, ok := s.fsm.brokers[s.cfg.NodeID]
	s.fsm.mu.RUnlock()
	if ok && cur.Equal(s.cfg.Broker) {
		return
	}
	if err := s.proposeJSON(context.Background(), cmdRegisterBroker, registerBrokerCmd{Broker: s.cfg.Broker}); err != nil {
		s.logger.Warn("register broker failed", "err", err)
	}
}

// Failed is closed when the state machine has stopped at an error it must
// not continue past (FailErr says which): the node must stop serving.
func (s *Store) Failed() <-chan struct{} { return s.fsm.failCh }

// Closing is closed when Close begins.
func (s *Store) Closing() <-chan struct{} { return s.stop }

// FailErr is why the state machine stopped; nil until Failed is closed.
func (s *Store) FailErr() error {
	select {
	case <-s.fsm.failCh:
		return s.fsm.failErr
	default:
		return nil
	}
}

// Close stops raft, checkpoints the FSM and closes every file.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.isClosed {
		s.closeMu.Unlock()
		return nil
	}
	s.isClosed = true
	s.closeMu.Unlock()
	close(s.stop)
	var errs []error
	if err := s.raft.Shutdown().Error(); err != nil {
		errs = append(errs, fmt.Errorf("raft shutdown: %w", err))
	}
	s.wg.Wait()
	// Raft's FSM goroutine has stopped: nothing else touches the FSM. A
	// checkpoint in flight finishes before the files close. A failed node
	// (an entry it could not apply, or a checkpoint that failed, in the
	// background or now) takes no checkpoint and detaches its logs: its
	// state may hold half an entry, or bytes whose sync failed.
	if err := s.fsm.awaitCheckpoint(); err != nil {
		s.fsm.markFailed(fmt.Errorf("checkpoint: %w", err))
	}
	if !s.fsm.failed() {
		if err := s.fsm.checkpoint(); err != nil {
			s.fsm.markFailed(fmt.Errorf("final checkpoint: %w", err))
			errs = append(errs, fmt.Errorf("final checkpoint: %w", err))
		}
	}
	s.fsm.stopped = s.fsm.failed()
	if err := s.closeAll(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (s *Store) closeAll() error {
	var errs []error
	if s.trans != nil {
		if err := s.trans.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close transport: %w", err))
		}
	}
	for _, c := range s.closer {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close raft store: %w", err))
		}
	}
	if s.fsm.stopped {
		// Half an entry may be in the logs: close without flushing; the
		// restart truncates to the checkpoint and replays.
		s.fsm.detachLogs()
	} else {
		s.fsm.closeLogs()
	}
	if err := s.fsm.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close state db: %w", err))
	}
	if err := s.lock.Close(); err != nil {
		errs = append(errs, fmt.Errorf("release data dir lock: %w", err))
	}
	return errors.Join(errs...)
}

func (f *fsm) detachLogs() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ts := range f.topics {
		for _, p := range ts.parts {
			_ = p.log.Detach()
		}
	}
}

func (f *fsm) closeLogs() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ts := range f.topics {
		closeParts(ts.parts)
	}
}
