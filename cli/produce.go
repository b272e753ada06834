package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerd/brokerd/clients/produce"
)

// deliveryTimeout bounds how long a record may wait for the cluster (an
// unreachable broker fails the command instead of hanging it).
const deliveryTimeout = 30 * time.Second

func newProduceCmd() *cobra.Command {
	var (
		keySep    string
		headers   []string
		partition int32
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce one record per line of stdin",
		Long: "produce reads stdin and sends one record per line to TOPIC (created if the broker\n" +
			"auto-creates topics), then prints what was acknowledged.",
		Example: "  echo hello | brokerd produce events\n" +
			"  printf 'user1:clicked\\nuser2:left\\n' | brokerd produce events -k : -H source=web",
		Args: cobra.ExactArgs(1),
	}
	f := addClientFlags(cmd.Flags(), false)
	cmd.Flags().StringVarP(&keySep, "key-separator", "k", "", "split each line at the first occurrence into key and value")
	cmd.Flags().StringArrayVarP(&headers, "header", "H", nil, "add a header key=value to every record (repeatable)")
	cmd.Flags().Int32VarP(&partition, "partition", "p", -1, "send every record to this partition (-1: by key, or sticky)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := f.check(); err != nil {
			return err
		}
		opts := produce.Options{Topic: args[0], KeySeparator: keySep, Partition: partition}
		for _, h := range headers {
			hd, err := produce.ParseHeader(h)
			if err != nil {
				return err
			}
			opts.Headers = append(opts.Headers, hd)
		}
		prog := newProgress(cmd.ErrOrStderr(), cmd.OutOrStdout(), false, "produced", 0)
		opts.Progress = prog.update
		ctx, cancel := f.context(cmd)
		defer cancel()
		kopts, err := f.kgoOpts()
		if err != nil {
			return err
		}
		res, err := produce.Lines(ctx, f.brokers, cmd.InOrStdin(), opts, append(kopts, kgo.RecordDeliveryTimeout(deliveryTimeout))...)
		prog.done()
		if err != nil {
			if res.Records > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d records were acknowledged before the error\n", res.Records)
			}
			return f.explain(err)
		}
		if f.json() {
			return writeJSON(cmd.OutOrStdout(), res)
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "produced %d records (%d bytes) to %s\n", res.Records, res.Bytes, res.Topic)
		for _, p := range res.Partitions {
			fmt.Fprintf(w, "  partition %d: offsets %d-%d\n", p.Partition, p.FirstOffset, p.LastOffset)
		}
		return nil
	}
	return cmd
}
