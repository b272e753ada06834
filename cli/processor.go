package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/brokerd/brokerd/clients/processors"
)

// newProcessorCmd is `brokerd processor ...`: the processors' admin API
// (on any member's admin address, which forwards to the leader).
func newProcessorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "processor",
		Short: "Deploy, inspect, pause and remove stream processors",
		Args:  cobra.NoArgs,
	}
	f := addClientFlags(cmd.PersistentFlags(), true)
	var adminAddr string
	cmd.PersistentFlags().StringVar(&adminAddr, "admin", "127.0.0.1:9644", "any member's admin address, host:port (https with the --tls flags)")
	addAdminAuthFlags(cmd.PersistentFlags())
	run := func(c *cobra.Command, op func(ctx context.Context, cl *processors.Client) error) error {
		if err := f.check(); err != nil {
			return err
		}
		base, hc, err := adminHTTP(cmd.PersistentFlags(), f.tls, adminAddr)
		if err != nil {
			return err
		}
		ctx, cancel := f.context(c)
		defer cancel()
		return op(ctx, processors.NewWithHTTP(base, hc))
	}
	show := func(c *cobra.Command, ps []processors.Processor) error {
		if f.json() {
			return writeJSON(c.OutOrStdout(), ps)
		}
		rows := make([][]string, 0, len(ps))
		for _, p := range ps {
			rows = append(rows, []string{p.Name, p.State, fmt.Sprint(p.Lag), fmt.Sprint(p.RecordsIn), fmt.Sprint(p.RecordsOut), fmt.Sprint(p.DLQ), p.LastError})
		}
		return table(c.OutOrStdout(), []string{"NAME", "STATE", "LAG", "IN", "OUT", "DLQ", "ERROR"}, rows)
	}
	var file string
	deploy := &cobra.Command{
		Use:   "deploy -f SPEC",
		Short: "Deploy the processors of a spec file (YAML documents or JSON; - reads stdin)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if file == "" {
				return fmt.Errorf("give the spec with -f FILE (or -f - for stdin)")
			}
			var spec []byte
			var err error
			if file == "-" {
				spec, err = io.ReadAll(io.LimitReader(c.InOrStdin(), 1<<20))
			} else {
				spec, err = os.ReadFile(file)
			}
			if err != nil {
				return fmt.Errorf("read spec: %w", err)
			}
			return run(c, func(ctx context.Context, cl *processors.Client) error {
				ps, err := cl.Deploy(ctx, spec)
				if err != nil {
					return err
				}
				return show(c, ps)
			})
		},
	}
	deploy.Flags().StringVarP(&file, "file", "f", "", "the spec file")
	cmd.AddCommand(deploy)
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the processors",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return run(c, func(ctx context.Context, cl *processors.Client) error {
				ps, err := cl.List(ctx)
				if err != nil {
					return err
				}
				return show(c, ps)
			})
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "status NAME",
		Short: "Show a processor: state, input offsets and lag, records in and out, steps, state size, last step, last error",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return run(c, func(ctx context.Context, cl *processors.Client) error {
				p, err := cl.Status(ctx, args[0])
				if err != nil {
					return err
				}
				if f.json() {
					return writeJSON(c.OutOrStdout(), p)
				}
				return printProcessor(c.OutOrStdout(), p)
			})
		},
	})
	for _, verb := range []struct {
		name, short string
		op          func(*processors.Client, context.Context, string) (processors.Processor, error)
	}{
		{"pause", "Pause a processor (it keeps its offsets and state)", (*processors.Client).Pause},
		{"resume", "Resume a paused processor", (*processors.Client).Resume},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   verb.name + " NAME",
			Short: verb.short,
			Args:  cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				return run(c, func(ctx context.Context, cl *processors.Client) error {
					p, err := verb.op(cl, ctx, args[0])
					if err != nil {
						return err
					}
					return show(c, []processors.Processor{p})
				})
			},
		})
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "delete NAME",
		Short: "Remove a processor and its state (its output topics stay)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return run(c, func(ctx context.Context, cl *processors.Client) error {
				if err := cl.Delete(ctx, args[0]); err != nil {
					return err
				}
				if !f.json() {
					fmt.Fprintf(c.OutOrStdout(), "deleted processor %s\n", args[0])
				}
				return nil
			})
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "state NAME KEY",
		Short: "Show the committed aggregate of a key",
		Args:  cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			return run(c, func(ctx context.Context, cl *processors.Client) error {
				v, err := cl.State(ctx, args[0], args[1])
				if err != nil {
					return err
				}
				if f.json() {
					return writeJSON(c.OutOrStdout(), v)
				}
				keys := make([]string, 0, len(v.Value))
				for k := range v.Value {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				pairs := [][2]string{{"KEY", v.Key}}
				for _, k := range keys {
					pairs = append(pairs, [2]string{k, fmt.Sprint(v.Value[k])})
				}
				return keyValues(c.OutOrStdout(), pairs)
			})
		},
	})
	return cmd
}

func printProcessor(w io.Writer, p processors.Processor) error {
	last := "never"
	if p.LastStepMs > 0 {
		last = time.UnixMilli(p.LastStepMs).UTC().Format(time.RFC3339Nano)
	}
	if err := keyValues(w, [][2]string{
		{"NAME", p.Name}, {"STATE", p.State}, {"INPUTS", fmt.Sprint(p.Inputs)}, {"OUTPUT", p.Output},
		{"LAG", fmt.Sprint(p.Lag)}, {"RECORDS-IN", fmt.Sprint(p.RecordsIn)}, {"RECORDS-OUT", fmt.Sprint(p.RecordsOut)},
		{"DLQ", fmt.Sprint(p.DLQ)}, {"LATE", fmt.Sprint(p.Late)}, {"STEPS", fmt.Sprint(p.Steps)},
		{"STATE-ENTRIES", fmt.Sprint(p.StateEntries)}, {"LAST-STEP", last}, {"LAST-ERROR", p.LastError},
	}); err != nil {
		return err
	}
	parts := make([]string, 0, len(p.Offsets))
	for k := range p.Offsets {
		parts = append(parts, k)
	}
	sort.Strings(parts)
	rows := make([][]string, 0, len(parts))
	for _, k := range parts {
		rows = append(rows, []string{k, fmt.Sprint(p.Offsets[k])})
	}
	fmt.Fprintln(w)
	return table(w, []string{"INPUT", "OFFSET"}, rows)
}
