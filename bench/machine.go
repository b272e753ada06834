package main

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// Machine describes where the figures were taken.
type Machine struct {
	NumCPU     int               `json:"nproc"`
	GOMAXPROCS int               `json:"gomaxprocs"`
	GoVersion  string            `json:"go_version"`
	OS         string            `json:"os"`
	Kernel     string            `json:"kernel"`
	CPU        string            `json:"cpu"`
	LoadAvg    string            `json:"loadavg_at_start"`
	LoadAvgEnd string            `json:"loadavg_at_end"`
	Modules    map[string]string `json:"modules"`
}

func machineInfo() Machine {
	m := Machine{
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		Kernel:     readTrim("/proc/sys/kernel/osrelease"),
		CPU:        cpuModel(),
		LoadAvg:    loadAvg(),
		Modules:    map[string]string{},
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if strings.HasPrefix(d.Path, "github.com/twmb/franz-go") || d.Path == "github.com/hashicorp/raft" {
				m.Modules[d.Path] = d.Version
			}
		}
	}
	return m
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// loadAvg is the 1, 5 and 15 minute load averages: on a shared machine, a
// high figure means the numbers below are noisy.
func loadAvg() string {
	f := strings.Fields(readTrim("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
