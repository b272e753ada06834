package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/brokerd/brokerd/clients/admin"
)

func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Inspect the cluster and change its raft membership",
		Args:  cobra.NoArgs,
	}
	f := addClientFlags(cmd.PersistentFlags(), true)
	cmd.AddCommand(&cobra.Command{
		Use:   "info",
		Short: "Show the cluster id, controller, brokers and topic count",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				info, err := c.ClusterInfo(ctx)
				if err != nil {
					return err
				}
				if f.json() {
					return writeJSON(cmd.OutOrStdout(), info)
				}
				w := cmd.OutOrStdout()
				if err := keyValues(w, [][2]string{
					{"CLUSTER", info.ClusterID}, {"CONTROLLER", fmt.Sprint(info.Controller)}, {"TOPICS", fmt.Sprint(info.Topics)},
				}); err != nil {
					return err
				}
				fmt.Fprintln(w)
				rows := make([][]string, 0, len(info.Brokers))
				for _, b := range info.Brokers {
					id := fmt.Sprint(b.NodeID)
					if b.NodeID == info.Controller {
						id += "*"
					}
					rows = append(rows, []string{id, b.Host, fmt.Sprint(b.Port), b.Rack})
				}
				return table(w, []string{"NODE-ID", "HOST", "PORT", "RACK"}, rows)
			})
		},
	})
	addMembershipCmds(cmd, f)
	return cmd
}
