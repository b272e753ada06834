package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerd/brokerd/clients/admin"
)

// clientFlags are the flags every client subcommand takes.
type clientFlags struct {
	brokers []string
	format  string
	timeout time.Duration
	tls     *tlsFlags
	sasl    *saslFlags
}

// addClientFlags registers -b/--brokers and --format on fs, --timeout
// when the command's work is bounded (admin requests), and the TLS and
// SASL flags.
func addClientFlags(fs *pflag.FlagSet, withTimeout bool) *clientFlags {
	f := &clientFlags{}
	fs.StringSliceVarP(&f.brokers, "brokers", "b", []string{"127.0.0.1:9092"}, "seed brokers, host:port[,host:port...]")
	fs.StringVar(&f.format, "format", "text", "output format: text or json")
	if withTimeout {
		fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up after this long")
	}
	f.tls = addTLSFlags(fs)
	f.sasl = addSASLFlags(fs)
	return f
}

func (f *clientFlags) check() error {
	if f.format != "text" && f.format != "json" {
		return fmt.Errorf("--format %q: want text or json", f.format)
	}
	if len(f.brokers) == 0 {
		return fmt.Errorf("--brokers: give at least one host:port")
	}
	return nil
}

func (f *clientFlags) json() bool { return f.format == "json" }

// context bounds the command by --timeout, if it has one.
func (f *clientFlags) context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if f.timeout > 0 {
		return context.WithTimeout(ctx, f.timeout)
	}
	return context.WithCancel(ctx)
}

// kgoOpts are the franz-go options of the TLS and SASL flags.
func (f *clientFlags) kgoOpts() ([]kgo.Opt, error) {
	tlsOpts, err := f.tls.kgoOpts()
	if err != nil {
		return nil, err
	}
	saslOpts, err := f.sasl.kgoOpts()
	if err != nil {
		return nil, err
	}
	return append(tlsOpts, saslOpts...), nil
}

// explain names the SASL mechanism and user in a failed authentication.
func (f *clientFlags) explain(err error) error { return f.sasl.explain(err) }

// withAdmin runs fn with an admin client, bounded by --timeout.
func (f *clientFlags) withAdmin(cmd *cobra.Command, fn func(ctx context.Context, c *admin.Client) error) error {
	if err := f.check(); err != nil {
		return err
	}
	opts, err := f.kgoOpts()
	if err != nil {
		return err
	}
	c, err := admin.New(f.brokers, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := f.context(cmd)
	defer cancel()
	return f.explain(fn(ctx, c))
}
