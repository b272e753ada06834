package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/brokerd/brokerd/clients/cluster"
)

// addMembershipCmds adds the raft membership subcommands, which talk to a
// member's admin HTTP address (--admin) rather than to Kafka.
func addMembershipCmds(cmd *cobra.Command, f *clientFlags) {
	var admin string
	cmd.PersistentFlags().StringVar(&admin, "admin", "127.0.0.1:9644", "any member's admin address, host:port (https with the --tls flags)")
	addAdminAuthFlags(cmd.PersistentFlags())
	run := func(c *cobra.Command, op func(ctx context.Context, cl *cluster.Client) (cluster.Status, error)) error {
		if err := f.check(); err != nil {
			return err
		}
		base, hc, err := adminHTTP(cmd.PersistentFlags(), f.tls, admin)
		if err != nil {
			return err
		}
		ctx, cancel := f.context(c)
		defer cancel()
		st, err := op(ctx, cluster.NewWithHTTP(base, hc))
		if err != nil {
			return err
		}
		return printMembers(c, f, st)
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "members",
		Short: "List the raft members: node id, raft and Kafka addresses, suffrage, leader",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return run(c, func(ctx context.Context, cl *cluster.Client) (cluster.Status, error) { return cl.Status(ctx) })
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "add NODE-ID RAFT-HOST:PORT",
		Short: "Add a node to the cluster as a voter (it then catches up by snapshot)",
		Args:  cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			id, err := nodeID(args[0])
			if err != nil {
				return err
			}
			return run(c, func(ctx context.Context, cl *cluster.Client) (cluster.Status, error) { return cl.Add(ctx, id, args[1]) })
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "remove NODE-ID",
		Short: "Remove a node from the cluster",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			id, err := nodeID(args[0])
			if err != nil {
				return err
			}
			return run(c, func(ctx context.Context, cl *cluster.Client) (cluster.Status, error) { return cl.Remove(ctx, id) })
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "transfer-leader NODE-ID",
		Short: "Hand raft leadership (the leadership of every partition) to a node",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			id, err := nodeID(args[0])
			if err != nil {
				return err
			}
			return run(c, func(ctx context.Context, cl *cluster.Client) (cluster.Status, error) {
				return cl.TransferLeader(ctx, id)
			})
		},
	})
}

func nodeID(s string) (int32, error) {
	id, err := strconv.ParseInt(s, 10, 32)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("node id %q: want a positive integer", s)
	}
	return int32(id), nil
}

func printMembers(c *cobra.Command, f *clientFlags, st cluster.Status) error {
	w := c.OutOrStdout()
	if f.json() {
		if st.Members == nil {
			st.Members = []cluster.Member{}
		}
		return writeJSON(w, st.Members)
	}
	rows := make([][]string, 0, len(st.Members))
	for _, m := range st.Members {
		lead := ""
		if m.Leader {
			lead = "*"
		}
		rows = append(rows, []string{fmt.Sprint(m.NodeID) + lead, m.RaftAddr, m.KafkaAddr, m.Suffrage})
	}
	fmt.Fprintf(w, "CLUSTER %s\n\n", st.ClusterID)
	return table(w, []string{"NODE-ID", "RAFT", "KAFKA", "SUFFRAGE"}, rows)
}
