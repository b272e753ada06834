package cli

import (
	"github.com/spf13/cobra"
)

// newRootCmd is `brokerd`: it serves, and holds the client subcommands.
func newRootCmd() *cobra.Command {
	cmd := newServeCmd()
	cmd.AddCommand(
		newTopicCmd(),
		newProduceCmd(),
		newConsumeCmd(),
		newGroupCmd(),
		newACLCmd(),
		newClusterCmd(),
		newUserCmd(),
		newProcessorCmd(),
		newVersionCmd(),
	)
	return cmd
}
