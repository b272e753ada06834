package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/brokerd/brokerd/clients/admin"
)

func newTopicCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, delete and configure topics",
		Args:  cobra.NoArgs,
	}
	f := addClientFlags(cmd.PersistentFlags(), true)
	cmd.AddCommand(
		newTopicCreateCmd(f),
		newTopicListCmd(f),
		newTopicDescribeCmd(f),
		newTopicDeleteCmd(f),
		newTopicAlterConfigCmd(f),
	)
	return cmd
}

func newTopicCreateCmd(f *clientFlags) *cobra.Command {
	var (
		partitions int32
		rf         int16
		configs    []string
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Example: "  brokerd topic create events -p 6\n" +
			"  brokerd topic create audit -p 1 -c retention.ms=-1 -c cleanup.policy=compact",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := parseKVs("-c", configs)
			if err != nil {
				return err
			}
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				t, err := c.CreateTopic(ctx, args[0], partitions, rf, cfg)
				if err != nil {
					return err
				}
				if f.json() {
					return writeJSON(cmd.OutOrStdout(), t)
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "created topic %s (%d partitions, replication factor %d, id %s)\n",
					t.Name, t.Partitions, t.ReplicationFactor, t.ID)
				return err
			})
		},
	}
	cmd.Flags().Int32VarP(&partitions, "partitions", "p", -1, "partitions (-1: the broker's num.partitions)")
	cmd.Flags().Int16VarP(&rf, "replication-factor", "r", -1, "replication factor (-1: the broker's default.replication.factor)")
	cmd.Flags().StringArrayVarP(&configs, "config", "c", nil, "topic config key=value (repeatable)")
	return cmd
}

func newTopicListCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List topics",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				ts, err := c.ListTopics(ctx)
				if err != nil {
					return err
				}
				if f.json() {
					return writeJSON(cmd.OutOrStdout(), ts)
				}
				rows := make([][]string, 0, len(ts))
				for _, t := range ts {
					name := t.Name
					if t.Internal {
						name += " (internal)"
					}
					rows = append(rows, []string{name, fmt.Sprint(t.Partitions), fmt.Sprint(t.ReplicationFactor), t.ID})
				}
				return table(cmd.OutOrStdout(), []string{"NAME", "PARTITIONS", "REPLICAS", "ID"}, rows)
			})
		},
	}
}

func newTopicDescribeCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a topic's partitions, offsets and configs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				d, err := c.DescribeTopic(ctx, args[0])
				if err != nil {
					return err
				}
				if f.json() {
					return writeJSON(cmd.OutOrStdout(), d)
				}
				return printTopic(cmd, d)
			})
		},
	}
}

func printTopic(cmd *cobra.Command, d admin.TopicDescription) error {
	w := cmd.OutOrStdout()
	if err := keyValues(w, [][2]string{
		{"NAME", d.Name}, {"ID", d.ID}, {"PARTITIONS", fmt.Sprint(len(d.Partitions))},
	}); err != nil {
		return err
	}
	fmt.Fprintln(w)
	rows := make([][]string, 0, len(d.Partitions))
	for _, p := range d.Partitions {
		rows = append(rows, []string{fmt.Sprint(p.Partition), fmt.Sprint(p.Leader), fmt.Sprint(p.LeaderEpoch),
			int32List(p.Replicas), int32List(p.ISR), fmt.Sprint(p.StartOffset), fmt.Sprint(p.EndOffset), p.Error})
	}
	if err := table(w, []string{"PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "LOG-START-OFFSET", "HIGH-WATERMARK", "ERROR"}, rows); err != nil {
		return err
	}
	fmt.Fprintln(w)
	rows = rows[:0]
	for _, c := range d.Configs {
		v := c.Value
		if c.Sensitive {
			v = "(sensitive)"
		}
		rows = append(rows, []string{c.Name, v, c.Source})
	}
	return table(w, []string{"CONFIG", "VALUE", "SOURCE"}, rows)
}

func newTopicDeleteCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "delete NAME",
		Aliases: []string{"rm"},
		Short:   "Delete a topic and its data",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				if err := c.DeleteTopic(ctx, args[0]); err != nil {
					return err
				}
				if f.json() {
					return writeJSON(cmd.OutOrStdout(), map[string]string{"deleted": args[0]})
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "deleted topic %s\n", args[0])
				return err
			})
		},
	}
}

func newTopicAlterConfigCmd(f *clientFlags) *cobra.Command {
	var (
		set []string
		del []string
	)
	cmd := &cobra.Command{
		Use:     "alter-config NAME",
		Short:   "Set or remove a topic's config overrides",
		Example: "  brokerd topic alter-config events -c retention.ms=3600000 --delete segment.bytes",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kv, err := parseKVs("-c", set)
			if err != nil {
				return err
			}
			if len(kv) == 0 && len(del) == 0 {
				return fmt.Errorf("nothing to change: give -c key=value or --delete key")
			}
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				if err := c.AlterTopicConfig(ctx, args[0], kv, del); err != nil {
					return err
				}
				if f.json() {
					return writeJSON(cmd.OutOrStdout(), map[string]any{"topic": args[0], "set": kv, "deleted": nonNilStrings(del)})
				}
				var parts []string
				for _, s := range set {
					parts = append(parts, "set "+s)
				}
				for _, d := range del {
					parts = append(parts, "removed "+d)
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "altered topic %s: %s\n", args[0], strings.Join(parts, ", "))
				return err
			})
		},
	}
	cmd.Flags().StringArrayVarP(&set, "config", "c", nil, "set a config, key=value (repeatable)")
	cmd.Flags().StringArrayVar(&del, "delete", nil, "remove a config override, back to the broker default (repeatable)")
	return cmd
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
