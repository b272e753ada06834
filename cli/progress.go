package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
)

// progress shows a one-line counter on stderr while a long operation runs,
// only when stderr is a terminal (and, for commands that stream records to
// stdout, only when stdout is not that terminal too).
type progress struct {
	w     io.Writer
	label string
	total int64

	mu    sync.Mutex
	last  time.Time
	shown bool
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// newProgress returns a progress line on stderr, or nil (which does
// nothing) when stderr is not a terminal or when streamsToStdout and stdout
// is a terminal.
func newProgress(stderr, stdout io.Writer, streamsToStdout bool, label string, total int64) *progress {
	if !isTerminal(stderr) || streamsToStdout && isTerminal(stdout) {
		return nil
	}
	return &progress{w: stderr, label: label, total: total}
}

// update shows n, at most ten times a second.
func (p *progress) update(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond && (p.total == 0 || n < p.total) {
		return
	}
	p.last = now
	p.shown = true
	if p.total > 0 {
		fmt.Fprintf(p.w, "\r\033[K%s %d/%d (%d%%)", p.label, n, p.total, n*100/p.total)
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s %d", p.label, n)
}

// setTotal sets the count the operation is heading for.
func (p *progress) setTotal(total int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = total
}

// done erases the progress line.
func (p *progress) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
