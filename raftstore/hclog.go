package raftstore

import (
	"bytes"
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// newHCLogger routes hashicorp/raft's logging through slog: hclog writes
// formatted lines, and each line becomes one slog record.
func newHCLogger(name string, l *slog.Logger) hclog.Logger {
	level := hclog.Info
	if !l.Enabled(context.Background(), slog.LevelInfo) {
		level = hclog.Warn
	}
	if l.Enabled(context.Background(), slog.LevelDebug) {
		level = hclog.Debug
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:            name,
		Level:           level,
		Output:          slogWriter{l.With("component", name)},
		DisableTime:     true,
		IncludeLocation: false,
	})
}

type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	lvl := slog.LevelInfo
	switch {
	case bytes.Contains(p, []byte("[ERROR]")):
		lvl = slog.LevelError
	case bytes.Contains(p, []byte("[WARN]")):
		lvl = slog.LevelWarn
	case bytes.Contains(p, []byte("[DEBUG]")), bytes.Contains(p, []byte("[TRACE]")):
		lvl = slog.LevelDebug
	}
	w.l.Log(context.Background(), lvl, line)
	return len(p), nil
}
