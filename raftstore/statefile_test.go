package raftstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestCheckStateFile: a bbolt file cut short of the pages its meta names
// is refused with a clear error (bbolt itself would SIGBUS on it); a whole
// one, a missing one and an empty one pass.
func TestCheckStateFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "brokerd-state.db")
	if err := checkStateFile(path); err != nil {
		t.Fatalf("missing file: %v", err)
	}
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for i := 0; i < 20; i++ {
			b, err := tx.CreateBucketIfNotExists([]byte{'b', byte(i)})
			if err != nil {
				return err
			}
			for j := 0; j < 50; j++ {
				if err := b.Put([]byte(strings.Repeat("k", j+1)), make([]byte, 100)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := checkStateFile(path); err != nil {
		t.Fatalf("whole file: %v", err)
	}
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	err = checkStateFile(path)
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("file cut from %d to %d bytes: %v, want an error naming the truncation", st.Size(), st.Size()/2, err)
	}
	t.Log(err)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := checkStateFile(path); err != nil {
		t.Fatalf("empty file: %v", err)
	}
}
