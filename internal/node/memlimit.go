package node

import (
	"bufio"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/raftstore"
)

// A broker in a container must fit the container's memory: the kernel
// kills it otherwise, losing nothing acknowledged, but everyone's requests
// in flight. At start, a memory limit of the process's cgroup sizes what is
// not set by hand:
//   - Go's own memory limit (GOMEMLIMIT), to three quarters of it, so the
//     garbage collector works harder before the kernel kills;
//   - the in-flight request budget (queued.max.request.bytes), to an eighth
//     of it at most, and the largest request (socket.request.max.bytes) to
//     what that budget admits;
//   - the produce bytes in flight to raft, to a sixteenth of it at most.

// cgroupRoot is where the cgroup filesystems are mounted, and procCgroup
// lists this process's cgroups (variables for tests).
var (
	cgroupRoot = "/sys/fs/cgroup"
	procCgroup = "/proc/self/cgroup"
)

// memoryLimit is the smallest memory limit of the cgroups that hold this
// process (v1's memory controller, or v2), if any.
func memoryLimit() (uint64, bool) {
	f, err := os.Open(procCgroup)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	best, found := uint64(math.MaxUint64), false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-id:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dirs []string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dirs = []string{cgroupRoot, filepath.Join(cgroupRoot, "unified")}
		case hasController(parts[1], "memory"):
			dirs = []string{filepath.Join(cgroupRoot, "memory")}
		default:
			continue
		}
		for _, root := range dirs {
			// The path and each of its parents: a parent's limit binds too.
			for p := filepath.Join(root, parts[2]); strings.HasPrefix(p, root); p = filepath.Dir(p) {
				for _, name := range []string{"memory.max", "memory.limit_in_bytes"} {
					if v, ok := readLimit(filepath.Join(p, name)); ok && v < best {
						best, found = v, true
					}
				}
				if p == root {
					break
				}
			}
		}
	}
	return best, found
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a cgroup memory limit file; "max" and v1's huge
// "unlimited" value are no limit.
func readLimit(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v >= 1<<62 {
		return 0, false
	}
	return v, true
}

// sizeForMemory applies the cgroup memory limit, if any, to what cfg
// leaves to the defaults.
func sizeForMemory(cfg *Config, logger *slog.Logger) {
	limit, ok := memoryLimit()
	if !ok {
		return
	}
	attrs := []any{"limit_bytes", limit}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(int64(limit / 4 * 3))
		attrs = append(attrs, "go_memory_limit_bytes", limit/4*3)
	}
	if cfg.AutoInFlightBytes {
		b := int64(limit / 8)
		if !cfg.AutoMaxRequestBytes {
			// A request size set by hand keeps a budget that admits it.
			b = max(b, wire.MinInFlightBytesFor(cfg.Wire.MaxRequestBytes))
		}
		if b < cfg.Wire.MaxInFlightBytes {
			cfg.Wire.MaxInFlightBytes = b
		}
		attrs = append(attrs, "queued_max_request_bytes", cfg.Wire.MaxInFlightBytes)
		if cfg.AutoMaxRequestBytes {
			if m := wire.MaxRequestBytesFor(cfg.Wire.MaxInFlightBytes); m < cfg.Wire.MaxRequestBytes {
				cfg.Wire.MaxRequestBytes = m
			}
			attrs = append(attrs, "socket_request_max_bytes", cfg.Wire.MaxRequestBytes)
		}
	}
	if cfg.MaxProposalBytes == 0 {
		cfg.MaxProposalBytes = min(int64(raftstore.DefaultProposalBytes), int64(limit/16))
		attrs = append(attrs, "proposal_bytes", cfg.MaxProposalBytes)
	}
	logger.Info("sized for the container's memory limit", attrs...)
}
