package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/brokerd/brokerd/clients/admin"
)

func newGroupCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe, delete and seek consumer groups",
		Args:  cobra.NoArgs,
	}
	f := addClientFlags(cmd.PersistentFlags(), true)
	cmd.AddCommand(newGroupListCmd(f), newGroupDescribeCmd(f), newGroupDeleteCmd(f), newGroupSeekCmd(f))
	return cmd
}

func newGroupListCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List consumer groups",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				gs, err := c.ListGroups(ctx)
				if err != nil {
					return err
				}
				if f.json() {
					return writeJSON(cmd.OutOrStdout(), gs)
				}
				rows := make([][]string, 0, len(gs))
				for _, g := range gs {
					rows = append(rows, []string{g.Group, g.State, g.ProtocolType, fmt.Sprint(g.Coordinator)})
				}
				return table(cmd.OutOrStdout(), []string{"GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR"}, rows)
			})
		},
	}
}

func newGroupDescribeCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe GROUP",
		Short: "Show a group's members, committed offsets and lag",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				d, err := c.DescribeGroup(ctx, args[0])
				if err != nil {
					return err
				}
				if f.json() {
					return writeJSON(cmd.OutOrStdout(), d)
				}
				return printGroup(cmd, d)
			})
		},
	}
}

// printGroup prints a group the way kafka-consumer-groups.sh --describe
// does, after a summary line.
func printGroup(cmd *cobra.Command, d admin.GroupDescription) error {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "GROUP %s: state %s, %d member(s), coordinator %d, total lag %d\n\n",
		d.Group, d.State, len(d.Members), d.Coordinator, d.TotalLag)
	rows := make([][]string, 0, len(d.Offsets))
	for _, o := range d.Offsets {
		cur, end, lag := "", "", ""
		if o.CurrentOffset >= 0 {
			cur = fmt.Sprint(o.CurrentOffset)
		}
		if o.LogEndOffset >= 0 {
			end = fmt.Sprint(o.LogEndOffset)
		}
		if o.Lag >= 0 {
			lag = fmt.Sprint(o.Lag)
		}
		rows = append(rows, []string{o.Topic, fmt.Sprint(o.Partition), cur, end, lag, o.ConsumerID, o.Host, o.ClientID})
	}
	return table(w, []string{"TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}, rows)
}

func newGroupDeleteCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "delete GROUP",
		Aliases: []string{"rm"},
		Short:   "Delete a group (it must have no members) and its committed offsets",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				if err := c.DeleteGroup(ctx, args[0]); err != nil {
					return err
				}
				if f.json() {
					return writeJSON(cmd.OutOrStdout(), map[string]string{"deleted": args[0]})
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "deleted group %s\n", args[0])
				return err
			})
		},
	}
}

func newGroupSeekCmd(f *clientFlags) *cobra.Command {
	var (
		to     string
		topics []string
	)
	cmd := &cobra.Command{
		Use:   "seek GROUP --to start|end|OFFSET|TIME",
		Short: "Move an inactive group's committed offsets",
		Long: "seek commits new offsets for a group with no active members: the start or end of each\n" +
			"partition, one OFFSET for every partition (clamped into the log), or the first record at or\n" +
			"after a TIME (RFC 3339, e.g. 2024-05-01T12:00:00Z, or @unix-milliseconds). Without --topic it\n" +
			"moves every partition the group has committed.",
		Example: "  brokerd group seek billing --to start\n" +
			"  brokerd group seek billing --to 2024-05-01T12:00:00Z --topic events",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := admin.ParseSeekTarget(to)
			if err != nil {
				return err
			}
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				prog := newProgress(cmd.ErrOrStderr(), cmd.OutOrStdout(), false, "committed partitions", 0)
				moved, err := c.SeekGroup(ctx, args[0], target, topics, func(done, total int) {
					prog.setTotal(int64(total))
					prog.update(int64(done))
				})
				prog.done()
				if err != nil {
					return err
				}
				if f.json() {
					return writeJSON(cmd.OutOrStdout(), moved)
				}
				rows := make([][]string, 0, len(moved))
				for _, m := range moved {
					from := ""
					if m.From >= 0 {
						from = fmt.Sprint(m.From)
					}
					rows = append(rows, []string{m.Topic, fmt.Sprint(m.Partition), from, fmt.Sprint(m.To)})
				}
				return table(cmd.OutOrStdout(), []string{"TOPIC", "PARTITION", "FROM", "TO"}, rows)
			})
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "start, end, an offset, or a time (RFC 3339 or @unix-ms)")
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "seek only this topic's partitions (repeatable)")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}
