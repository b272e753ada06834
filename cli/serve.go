package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/brokerd/brokerd/internal/config"
	"github.com/brokerd/brokerd/internal/node"
)

// closeBudget is what shutdown may take beyond the request grace period:
// leadership transfer, stopping raft and the final checkpoint (fsync).
const closeBudget = 15 * time.Second

func newServeCmd() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "brokerd",
		Short: "A Kafka-compatible broker with raft replication and stream processing",
		Long: "brokerd serves the Kafka protocol. With no flags it runs one node with its data in\n" +
			"./brokerd-data, listening on 127.0.0.1 only. Configuration comes from flags, then\n" +
			"BROKERD_* environment variables (BROKERD_LOG_DIRS sets log.dirs), then --config, then\n" +
			"defaults. The subcommands below administer a running cluster.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd, o)
		},
	}
	addServeFlags(cmd.Flags(), o)
	return cmd
}

// loadConfig merges the config sources for serve.
func loadConfig(cmd *cobra.Command, o *serveOptions) (*config.Config, error) {
	flags, err := flagInputs(cmd, o)
	if err != nil {
		return nil, err
	}
	return config.Load(config.Sources{File: o.configFile, Environ: os.Environ(), Flags: flags})
}

func newLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

func printConfig(w io.Writer, cfg *config.Config) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, s := range cfg.Settings() {
		origin := s.Origin
		if s.Source == config.SourceDefault {
			origin = "default"
		}
		value := s.Value
		if k, ok := config.Lookup(s.Key); ok && k.Secret && value != "" {
			value = "(hidden)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Key, value, origin)
	}
	return tw.Flush()
}

func serve(cmd *cobra.Command, o *serveOptions) error {
	// Catch signals from the start: one during start-up aborts it.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	// SIGHUP reloads the SSL listeners' certificates; caught from the start
	// too, so that one during start-up does not end the process.
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)

	cfg, err := loadConfig(cmd, o)
	if err != nil {
		return err
	}
	ncfg, err := cfg.Node()
	if err != nil {
		return err
	}
	if o.printConfig {
		return printConfig(cmd.OutOrStdout(), cfg)
	}
	logger, err := newLogger(cfg.LogLevel(), cfg.LogFormat(), cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	slog.SetDefault(logger)
	for _, w := range cfg.Warnings() {
		logger.Warn("config: " + w)
	}
	ncfg.Logger = logger
	ncfg.Version = version

	// A signal during start-up cancels it; one that arrives as start-up
	// completes is kept for the wait below.
	startCtx, cancelStart := context.WithCancel(context.Background())
	early := make(chan os.Signal, 1)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case sig := <-sigs:
			early <- sig
			cancelStart()
		case <-startCtx.Done():
		}
	}()
	n, err := node.Start(startCtx, ncfg)
	cancelStart()
	<-watched
	if err != nil {
		if len(early) > 0 {
			logger.Info("start-up interrupted by a signal", "err", err)
			return nil
		}
		return err
	}
	reloadDone := make(chan struct{})
	defer close(reloadDone)
	go reloadOnHUP(n, hups, reloadDone, logger)
	var failure error
	select {
	case sig := <-early:
		logger.Info("shutting down", "signal", sig.String(), "timeout", cfg.ShutdownTimeout().String())
	case sig := <-sigs:
		logger.Info("shutting down", "signal", sig.String(), "timeout", cfg.ShutdownTimeout().String())
	case failure = <-n.Failed():
		logger.Error("shutting down after a failure", "err", failure)
	}
	return stop(n, cfg.ShutdownTimeout(), sigs, logger, failure)
}

// reloadOnHUP reloads the TLS certificates at each SIGHUP until done is
// closed. A failed reload keeps the certificates in use (and is logged by
// the node).
func reloadOnHUP(n *node.Node, hups <-chan os.Signal, done <-chan struct{}, logger *slog.Logger) {
	for {
		select {
		case <-hups:
			logger.Info("SIGHUP: reloading TLS certificates")
			_ = n.ReloadTLS()
		case <-done:
			return
		}
	}
}

// stop shuts the node down within grace plus closeBudget; a second signal
// or the deadline ends the process at once with status 1.
func stop(n *node.Node, grace time.Duration, sigs <-chan os.Signal, logger *slog.Logger, failure error) error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		done <- n.Shutdown(ctx)
	}()
	deadline := time.NewTimer(grace + closeBudget)
	defer deadline.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("shutdown: %w", err)
		}
		if failure != nil {
			return failure
		}
		logger.Info("stopped cleanly")
		return nil
	case sig := <-sigs:
		logger.Warn("second signal: exiting now", "signal", sig.String())
	case <-deadline.C:
		logger.Error("shutdown did not finish in time: exiting now", "limit", (grace + closeBudget).String())
	}
	os.Exit(1)
	return nil // not reached
}
