package node

import (
	"os"
	"path/filepath"
	"testing"
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
