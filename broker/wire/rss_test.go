package wire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// vmRSS reads this process's resident set size from /proc.
func vmRSS(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestTricklingRSS measures the scenario: 500 connections from 10
// addresses trickling 90 MiB Produce frames at the default 256 MiB budget.
// It reports the peak RSS; run it alone with BROKERD_RSS=1.
func TestTricklingRSS(t *testing.T) {
	if os.Getenv("BROKERD_RSS") == "" {
		t.Skip("set BROKERD_RSS=1 to measure")
	}
	s := startServer(t, Config{ReadTimeout: time.Minute}, nil, answerAll)
	runtime.GC()
	base := vmRSS("VmRSS")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	chunk := make([]byte, 256<<10) // shared: the clients hold no memory of their own
	for i := range 500 {
		c := dialFrom(t, s.Addr(), fmt.Sprintf("127.0.5.%d", 1+i%10))
		wg.Add(1)
		go func() {
			defer wg.Done()
			hdr := binary.BigEndian.AppendUint32(nil, 90<<20)
			hdr = binary.BigEndian.AppendUint16(hdr, uint16(apiKeyProduce))
			hdr = binary.BigEndian.AppendUint16(hdr, 9)
			_, _ = c.nc.Write(hdr)
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				_ = c.nc.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
				_, _ = c.nc.Write(chunk)
			}
		}()
	}
	var peak, peakCharged int64
	end := time.Now().Add(20 * time.Second)
	for time.Now().Before(end) {
		time.Sleep(50 * time.Millisecond)
		peak = max(peak, vmRSS("VmRSS"))
		peakCharged = max(peakCharged, s.InFlightBytes())
	}
	close(stop)
	wg.Wait()
	t.Logf("RSS before %d MiB, peak %d MiB (VmHWM %d MiB); peak charged %d MiB of %d MiB",
		base>>20, peak>>20, vmRSS("VmHWM")>>20, peakCharged>>20, s.cfg.MaxInFlightBytes>>20)
}
