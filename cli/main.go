package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Main runs the brokerd command with os.Args and exits with its status.
func Main() {
	// The first SIGINT or SIGTERM cancels the command's context: client
	// commands stop and print what they did, serve shuts down gracefully.
	// After that the default handling returns for commands that do not
	// catch signals themselves, so a second Ctrl-C always ends them.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "brokerd:", err)
		os.Exit(1)
	}
}
