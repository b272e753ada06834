package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// newTestPowercutFS mounts a power-cut filesystem for one test, or skips
// the test where FUSE cannot be mounted (not root, no /dev/fuse).
func newTestPowercutFS(t *testing.T) *powercutFS {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("powercutfs mounts FUSE directly: needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no /dev/fuse: %v", err)
	}
	dir := t.TempDir()
	p, err := newPowercutFS(filepath.Join(dir, "mnt"), filepath.Join(dir, "backing"))
	if err != nil {
		t.Skipf("cannot mount FUSE here: %v", err)
	}
	t.Cleanup(func() {
		if err := p.unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return p
}

func (p *powercutFS) path(name string) string { return filepath.Join(p.dir, name) }

func mustCut(t *testing.T, p *powercutFS) {
	t.Helper()
	if err := p.cut(); err != nil {
		t.Fatalf("cut: %v", err)
	}
}

func wantContent(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes %.40q, want %d bytes %.40q", filepath.Base(path), len(got), got, len(want), want)
	}
}

func wantMissing(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("%s: %v, want it gone after the cut", filepath.Base(path), err)
	}
}

func syncDirOf(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatalf("fsync %s: %v", dir, err)
	}
}

// TestPowerCutFSData: write, fsync, write, cut: the first write survives,
// the second is gone; a file never fsynced is gone.
func TestPowerCutFSData(t *testing.T) {
	p := newTestPowercutFS(t)
	f, err := os.Create(p.path("a"))
	if err != nil {
		t.Fatal(err)
	}
	first := bytes.Repeat([]byte("first "), 2000) // 12000 bytes: spans pages
	if _, err := f.Write(first); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("SECOND"), 5000); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("appended"), int64(len(first))); err != nil {
		t.Fatal(err)
	}
	live := append(append([]byte{}, first...), "appended"...)
	copy(live[5000:], "SECOND")
	wantContent(t, p.path("a"), live) // reads see every write
	f.Close()
	g, _ := os.Create(p.path("never-synced"))
	g.WriteString("lost")
	g.Close()

	mustCut(t, p)
	wantContent(t, p.path("a"), first)
	wantMissing(t, p.path("never-synced"))

	// Truncate, then grow: the cut bytes read as zeros, and the cut
	// restores them.
	f, _ = os.OpenFile(p.path("a"), os.O_RDWR, 0)
	defer f.Close()
	if err := f.Truncate(100); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("x"), 9000); err != nil {
		t.Fatal(err)
	}
	grown := make([]byte, 9001)
	copy(grown, first[:100])
	grown[9000] = 'x'
	wantContent(t, p.path("a"), grown)
	f.Close()
	mustCut(t, p)
	wantContent(t, p.path("a"), first)
	// The same made durable by fdatasync.
	f, _ = os.OpenFile(p.path("a"), os.O_RDWR, 0)
	f.Truncate(100)
	f.WriteAt([]byte("x"), 9000)
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	f.Close()
	mustCut(t, p)
	wantContent(t, p.path("a"), grown)
	t.Log(p.stats())
}

// TestPowerCutFSNamespace: a rename, an unlink or a create that no fsync
// covered is undone; an fsync of the directory keeps it; an fsync of a
// file keeps its own creation.
func TestPowerCutFSNamespace(t *testing.T) {
	p := newTestPowercutFS(t)
	if err := os.WriteFile(p.path("tmp"), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(p.path("tmp"), os.O_RDWR, 0)
	f.Sync() // the data and the file's own creation
	f.Close()
	if err := os.Rename(p.path("tmp"), p.path("final")); err != nil {
		t.Fatal(err)
	}
	wantContent(t, p.path("final"), []byte("content"))
	mustCut(t, p)
	wantContent(t, p.path("tmp"), []byte("content"))
	wantMissing(t, p.path("final"))

	// The same followed by an fsync of the directory.
	os.Rename(p.path("tmp"), p.path("final"))
	syncDirOf(t, p.dir)
	mustCut(t, p)
	wantContent(t, p.path("final"), []byte("content"))
	wantMissing(t, p.path("tmp"))

	// Unlink without a directory fsync is undone.
	os.Remove(p.path("final"))
	mustCut(t, p)
	wantContent(t, p.path("final"), []byte("content"))

	// A new directory and a file in it: the file's fsync makes both
	// durable (a prefix of the journal); a hard link and an unlink
	// of the original, with the directory fsynced, leave the link.
	if err := os.MkdirAll(p.path("d/e"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p.path("d/e/x"), []byte("in a new directory"), 0o644)
	f, _ = os.OpenFile(p.path("d/e/x"), os.O_RDWR, 0)
	f.Sync()
	f.Close()
	if err := os.Link(p.path("final"), p.path("d/linked")); err != nil {
		t.Fatal(err)
	}
	os.Remove(p.path("final"))
	syncDirOf(t, p.path("d"))
	// The unlink came after the link: the fsync of d did not cover it.
	mustCut(t, p)
	wantContent(t, p.path("final"), []byte("content"))
	os.Remove(p.path("final"))
	syncDirOf(t, p.dir)
	mustCut(t, p)
	wantContent(t, p.path("d/e/x"), []byte("in a new directory"))
	wantContent(t, p.path("d/linked"), []byte("content"))
	wantMissing(t, p.path("final"))

	// A file made durable whose data was never synced comes back empty.
	os.WriteFile(p.path("d/empty"), []byte("unsynced data"), 0o644)
	syncDirOf(t, p.path("d"))
	mustCut(t, p)
	wantContent(t, p.path("d/empty"), nil)
	if err := os.Remove(p.path("d")); err == nil {
		t.Fatal("rmdir of a non-empty directory succeeded")
	}
	t.Log(p.stats())
}

// TestPowerCutFSSyscalls: what brokerd, raft-wal and bbolt use besides
// write and fsync: sync_file_range (makes nothing durable), fallocate
// (raft-wal preallocates segments), pread/pwrite and mmap reads (bbolt),
// statfs (the broker's free-space check), O_APPEND.
func TestPowerCutFSSyscalls(t *testing.T) {
	p := newTestPowercutFS(t)
	f, err := os.OpenFile(p.path("seg"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, 1<<20); err != nil {
		t.Fatalf("fallocate: %v", err)
	}
	if fi, _ := f.Stat(); fi.Size() != 1<<20 {
		t.Fatalf("size after fallocate: %d", fi.Size())
	}
	f.Sync()
	f.WriteAt([]byte("written back, not synced"), 0)
	if err := unix.SyncFileRange(int(f.Fd()), 0, 4096, unix.SYNC_FILE_RANGE_WRITE); err != nil {
		t.Fatalf("sync_file_range: %v", err)
	}
	// mmap sees what write wrote (in a child process: see runPowercutChild).
	runPowercutChild(t, "mmap", p.path("seg"))
	var st unix.Statfs_t
	if err := unix.Statfs(p.dir, &st); err != nil || st.Bavail == 0 {
		t.Fatalf("statfs: %v, %d blocks available", err, st.Bavail)
	}
	f.Close()
	a, _ := os.OpenFile(p.path("app"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	a.WriteString("one,")
	a.WriteString("two")
	a.Sync()
	a.Close()
	mustCut(t, p)
	wantContent(t, p.path("seg"), make([]byte, 1<<20))
	wantContent(t, p.path("app"), []byte("one,two"))
}

// TestPowerCutFSBolt: bbolt (brokerd's state database, raft-wal's meta
// store) on the filesystem: committed transactions survive a cut, one
// committed without fsync does not, and the database opens after it.
func TestPowerCutFSBolt(t *testing.T) {
	p := newTestPowercutFS(t)
	path := p.path("state.db")
	runPowercutChild(t, "bolt-write", path)
	syncDirOf(t, p.dir) // bbolt does not fsync the directory after creating the file
	mustCut(t, p)
	runPowercutChild(t, "bolt-check", path)
}

// runPowercutChild runs one step of a test in a child process (this test
// binary, running TestPowerCutFSChild): a page fault on an mmap of a FUSE
// file in the process that serves it can deadlock, since the faulting
// thread is invisible to the Go scheduler and a stop-the-world for GC
// then waits for it while the server's goroutines are stopped.
func runPowercutChild(t *testing.T, step, path string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPowerCutFSChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "E2E_POWERCUT_CHILD="+step, "E2E_POWERCUT_PATH="+path)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("PASS")) {
		t.Fatalf("child step %s: %v\n%s", step, err, out)
	}
}

// TestPowerCutFSChild is a step of another test, run in a child process
// (runPowercutChild); skipped when run directly.
func TestPowerCutFSChild(t *testing.T) {
	path := os.Getenv("E2E_POWERCUT_PATH")
	switch os.Getenv("E2E_POWERCUT_CHILD") {
	case "mmap":
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		m, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			t.Fatalf("mmap: %v", err)
		}
		defer unix.Munmap(m)
		if !bytes.HasPrefix(m, []byte("written back")) {
			t.Fatalf("mmap reads %.20q", m)
		}
		f.WriteAt([]byte("WRITTEN"), 0)
		if !bytes.HasPrefix(m, []byte("WRITTEN back")) {
			t.Fatalf("mmap after a write reads %.20q", m)
		}
	case "bolt-write":
		db, err := bolt.Open(path, 0o644, nil)
		if err != nil {
			t.Fatalf("open bbolt: %v", err)
		}
		put := func(k, v string) {
			if err := db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("b"))
				if err != nil {
					return err
				}
				return b.Put([]byte(k), []byte(v))
			}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 200 {
			put(string(rune('a'+i%26))+string(rune('0'+i/26)), string(bytes.Repeat([]byte{'v'}, 1000)))
		}
		put("durable", "yes")
		db.NoSync = true
		put("volatile", "yes")
		db.Close()
	case "bolt-check":
		db, err := bolt.Open(path, 0o644, nil)
		if err != nil {
			t.Fatalf("open bbolt after the cut: %v", err)
		}
		defer db.Close()
		db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("b"))
			if b == nil || string(b.Get([]byte("durable"))) != "yes" {
				t.Fatal("a committed transaction was lost")
			}
			if b.Get([]byte("volatile")) != nil {
				t.Fatal("a transaction committed without fsync survived the cut")
			}
			return nil
		})
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte("after"), []byte("cut")) }); err != nil {
			t.Fatal(err)
		}
	default:
		t.Skip("a step of another test")
	}
}
