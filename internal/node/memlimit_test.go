package node

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
)

func TestMemoryLimit(t *testing.T) {
	write := func(t *testing.T, path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		cgroup string
		files  map[string]string
		want   uint64
		ok     bool
	}{
		{name: "v1", cgroup: "4:memory:/broker\n3:cpu,cpuacct:/broker\n",
			files: map[string]string{"memory/broker/memory.limit_in_bytes": "536870912\n", "memory/memory.limit_in_bytes": "9223372036854771712\n"},
			want:  512 << 20, ok: true},
		{name: "v1 parent binds", cgroup: "4:memory:/a/b\n",
			files: map[string]string{"memory/a/b/memory.limit_in_bytes": "9223372036854771712\n", "memory/a/memory.limit_in_bytes": "1073741824\n"},
			want:  1 << 30, ok: true},
		{name: "v2", cgroup: "0::/system.slice/brokerd.service\n",
			files: map[string]string{"system.slice/brokerd.service/memory.max": "268435456\n", "system.slice/memory.max": "max\n"},
			want:  256 << 20, ok: true},
		{name: "v2 unlimited", cgroup: "0::/x\n", files: map[string]string{"x/memory.max": "max\n"}},
		{name: "no memory controller", cgroup: "3:cpu:/x\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for p, d := range c.files {
				write(t, filepath.Join(root, "fs", p), d)
			}
			write(t, filepath.Join(root, "cgroup"), c.cgroup)
			defer func(r, p string) { cgroupRoot, procCgroup = r, p }(cgroupRoot, procCgroup)
			cgroupRoot, procCgroup = filepath.Join(root, "fs"), filepath.Join(root, "cgroup")
			got, ok := memoryLimit()
			if ok != c.ok || got != c.want && c.ok {
				t.Fatalf("memoryLimit() = %d, %v; want %d, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

// TestSizeForMemoryKeepsExplicitRequestSize: in a 1 GiB container, a
// socket.request.max.bytes set by hand (here Kafka's default value) with
// queued.max.request.bytes left to its default: the budget is lowered no
// further than what admits that size, so the listener still starts (it
// refused, telling the user to raise a setting they never set).
func TestSizeForMemoryKeepsExplicitRequestSize(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "fs/memory/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "fs/memory/b/memory.limit_in_bytes"), []byte("1073741824\n"), 0o644)
	os.WriteFile(filepath.Join(root, "cgroup"), []byte("4:memory:/b\n"), 0o644)
	defer func(r, p string) { cgroupRoot, procCgroup = r, p }(cgroupRoot, procCgroup)
	cgroupRoot, procCgroup = filepath.Join(root, "fs"), filepath.Join(root, "cgroup")
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })

	cfg := Config{AutoInFlightBytes: true}
	cfg.Wire.MaxInFlightBytes = 256 << 20
	cfg.Wire.MaxRequestBytes = 100 << 20
	cfg.Wire.Addr = "127.0.0.1:0"
	sizeForMemory(&cfg, slog.New(slog.DiscardHandler))
	if got := debug.SetMemoryLimit(-1); got != 768<<20 {
		t.Errorf("Go memory limit %d, want 768 MiB", got)
	}
	s := wire.NewServer(cfg.Wire, func(int16) (int16, int16, bool) { return 0, 0, true },
		func(context.Context, *wire.Request) (kmsg.Response, error) { return nil, nil })
	if err := s.Listen(); err != nil {
		t.Fatalf("in-flight %d, max request %d: the listener refused: %v", cfg.Wire.MaxInFlightBytes, cfg.Wire.MaxRequestBytes, err)
	}
	s.Close()

	cfg = Config{AutoInFlightBytes: true, AutoMaxRequestBytes: true}
	cfg.Wire.MaxInFlightBytes = 256 << 20
	cfg.Wire.MaxRequestBytes = 100 << 20
	sizeForMemory(&cfg, slog.New(slog.DiscardHandler))
	if cfg.Wire.MaxInFlightBytes != 128<<20 || cfg.Wire.MaxRequestBytes != wire.MaxRequestBytesFor(128<<20) || cfg.MaxProposalBytes != 32<<20 {
		t.Errorf("defaults in a 1 GiB container: in-flight %d, max request %d, proposals %d", cfg.Wire.MaxInFlightBytes, cfg.Wire.MaxRequestBytes, cfg.MaxProposalBytes)
	}
}
