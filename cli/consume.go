package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerd/brokerd/clients/consume"
)

func newConsumeCmd() *cobra.Command {
	var (
		offset    string
		count     int64
		group     string
		template  string
		exitAtEnd bool
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC...",
		Short: "Print records from topics",
		Long: "consume prints records until interrupted, until -n records, or with -e until the end\n" +
			"of every partition as it was when consume started. -f renders each record with a kcat-style\n" +
			"template: %t topic, %p partition, %o offset, %k key, %K key length, %v or %s value,\n" +
			"%S value length, %T timestamp (ms), %h headers (k=v,...), %% a percent sign; \\n \\t \\r escapes.",
		Example: "  brokerd consume events -o start -e\n" +
			"  brokerd consume events -n 10 -f '%p:%o %k=%v\\n'\n" +
			"  brokerd consume events -g billing --format json",
		Args: cobra.MinimumNArgs(1),
	}
	f := addClientFlags(cmd.Flags(), false)
	cmd.Flags().StringVarP(&offset, "offset", "o", "start", "where to start: start, end, OFFSET, -N (N before the end) or @unix-ms; in a group, only where it has no committed offset")
	cmd.Flags().Int64VarP(&count, "count", "n", 0, "stop after this many records (0: no limit)")
	cmd.Flags().StringVarP(&group, "group", "g", "", "consume as a member of this consumer group and commit what was printed")
	cmd.Flags().StringVarP(&template, "template", "f", "", "kcat-style output template (default "+consume.DefaultFormat+"); not with --format json")
	cmd.Flags().BoolVarP(&exitAtEnd, "exit-at-end", "e", false, "stop at the end of every partition")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := f.check(); err != nil {
			return err
		}
		if f.json() && template != "" {
			return errors.New("-f/--template and --format json do not go together")
		}
		if template == "" {
			template = consume.DefaultFormat
		}
		tmpl, err := consume.NewFormatter(template)
		if err != nil {
			return err
		}
		off, err := consume.ParseOffset(offset)
		if err != nil {
			return err
		}
		if count < 0 {
			return fmt.Errorf("-n %d: want a count of 0 or more", count)
		}
		out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
		prog := newProgress(cmd.ErrOrStderr(), cmd.OutOrStdout(), true, "consumed", count)
		var buf []byte
		var n int64
		write := func(r *kgo.Record) error {
			buf = buf[:0]
			if f.json() {
				b, err := json.Marshal(consume.ToJSON(r))
				if err != nil {
					return fmt.Errorf("encode record: %w", err)
				}
				buf = append(append(buf, b...), '\n')
			} else {
				buf = tmpl.Append(buf, r)
			}
			if _, err := out.Write(buf); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			n++
			prog.update(n)
			return nil
		}
		opts := consume.Options{
			Topics: args, Offset: off, Count: count, Group: group, ExitAtEnd: exitAtEnd,
			AfterPoll: func() { _ = out.Flush() },
		}
		ctx, cancel := f.context(cmd)
		defer cancel()
		kopts, err := f.kgoOpts()
		if err != nil {
			return err
		}
		_, err = consume.Run(ctx, f.brokers, opts, write, kopts...)
		prog.done()
		if ferr := out.Flush(); ferr != nil && err == nil {
			err = fmt.Errorf("write: %w", ferr)
		}
		if errors.Is(err, context.Canceled) {
			return nil // interrupted: what was consumed is printed
		}
		return f.explain(err)
	}
	return cmd
}
