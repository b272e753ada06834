package raftstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A partition log that finds damaged data (log.ErrDamaged: a batch that
// was flushed intact and whose bytes changed on disk since) reports it
// here. The node must not serve it, nor lead with it: it writes a marker
// file into its data directory and stops (Store.Failed). While the marker
// exists, Open refuses to start, so that a supervisor's restart loop does
// not serve the damaged data again before the check finds it once more.
// The cure is to rebuild the node from its peers.

// damageMarker names the marker file in the data directory.
const damageMarker = "DAMAGED"

// damageAdvice is what to do about damaged data.
const damageAdvice = "move this node's data directory aside and restart it: it is rebuilt from its peers " +
	"(a single node has no peers: restore the data directory from a backup)"

// onDamage is every partition log's damage handler. It may run on any
// goroutine that reads a log.
func (f *fsm) onDamage(err error) {
	if werr := writeDamageMarker(f.dataDir, fmt.Sprintf("%s: %v", time.Now().UTC().Format(time.RFC3339), err)); werr != nil {
		f.logger.Error("could not write the damage marker", "err", werr)
	}
	f.markFailed(fmt.Errorf("%w: %w. It is not served, and this node stops (and refuses to start while %s exists); %s",
		ErrStorage, err, filepath.Join(f.dataDir, damageMarker), damageAdvice))
}

// writeDamageMarker writes the marker durably: the file, then its
// directory entry.
func writeDamageMarker(dataDir, msg string) error {
	path := filepath.Join(dataDir, damageMarker)
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = fh.WriteString(msg + "\n")
	err = errors.Join(err, fh.Sync(), fh.Close())
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(dataDir)
}

// syncDir fsyncs a directory, making its entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	err = errors.Join(d.Sync(), d.Close())
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// checkDamageMarker refuses a data directory that holds the marker.
func checkDamageMarker(dataDir string) error {
	path := filepath.Join(dataDir, damageMarker)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return fmt.Errorf("%w: refusing to start: %s says this node found damaged data (at %s); %s. "+
		"Remove the marker only if the damage was repaired otherwise",
		ErrStorage, path, strings.TrimSpace(string(b)), damageAdvice)
}
