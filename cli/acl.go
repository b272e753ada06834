package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/brokerd/brokerd/clients/admin"
)

func newACLCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Create, list and delete ACLs (the authorizer must be on: brokerd.authorizer.enabled)",
		Args:  cobra.NoArgs,
	}
	f := addClientFlags(cmd.PersistentFlags(), true)
	cmd.AddCommand(newACLCreateCmd(f), newACLListCmd(f), newACLDeleteCmd(f))
	return cmd
}

// addACLFlags adds rpk's ACL flags to fs, filling spec.
func addACLFlags(fs *pflag.FlagSet, spec *admin.ACLSpec, filter bool) {
	fs.StringSliceVar(&spec.AllowPrincipals, "allow-principal", nil, "principal allowed, User:name (repeatable or comma-separated)")
	fs.StringSliceVar(&spec.DenyPrincipals, "deny-principal", nil, "principal denied, User:name (repeatable or comma-separated)")
	fs.StringSliceVar(&spec.AllowHosts, "allow-host", nil, "host the allowed principals may come from (default *)")
	fs.StringSliceVar(&spec.DenyHosts, "deny-host", nil, "host the denied principals are denied from (default *)")
	fs.StringSliceVar(&spec.Operations, "operation", nil, "operation: all, read, write, create, delete, alter, describe, cluster_action, describe_configs, alter_configs, idempotent_write (repeatable or comma-separated)")
	fs.StringSliceVar(&spec.Topics, "topic", nil, "topic (repeatable); * is every topic")
	fs.StringSliceVar(&spec.Groups, "group", nil, "consumer group (repeatable); * is every group")
	fs.StringSliceVar(&spec.TransactionalIDs, "transactional-id", nil, "transactional id (repeatable); * is every id")
	fs.BoolVar(&spec.Cluster, "cluster", false, "the cluster resource")
	usage := "how names match: literal or prefixed"
	if filter {
		usage = "which bindings match: literal, prefixed, any (exact name, any pattern) or match (every binding that applies to the name)"
	}
	fs.StringVar(&spec.PatternType, "resource-pattern-type", "", usage)
}

func newACLCreateCmd(f *clientFlags) *cobra.Command {
	var spec admin.ACLSpec
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create ACLs: each principal gets each operation on each resource",
		Example: "  brokerd acl create --allow-principal User:bob --operation read,describe --topic orders\n" +
			"  brokerd acl create --allow-principal User:bob --operation write --topic orders. --resource-pattern-type prefixed",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				acls, err := c.CreateACLs(ctx, spec)
				if err != nil {
					return err
				}
				return printACLs(cmd.OutOrStdout(), f.json(), acls)
			})
		},
	}
	addACLFlags(cmd.Flags(), &spec, false)
	return cmd
}

func newACLListCmd(f *clientFlags) *cobra.Command {
	var spec admin.ACLSpec
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls", "describe"},
		Short:   "List the ACLs the flags match (none: every ACL)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				acls, err := c.ListACLs(ctx, spec)
				if err != nil {
					return err
				}
				return printACLs(cmd.OutOrStdout(), f.json(), acls)
			})
		},
	}
	addACLFlags(cmd.Flags(), &spec, true)
	return cmd
}

func newACLDeleteCmd(f *clientFlags) *cobra.Command {
	var spec admin.ACLSpec
	cmd := &cobra.Command{
		Use:     "delete",
		Aliases: []string{"rm"},
		Short:   "Delete the ACLs the flags match, and print them",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if spec.PatternType == "" && len(spec.Topics)+len(spec.Groups)+len(spec.TransactionalIDs) == 0 && !spec.Cluster &&
				len(spec.AllowPrincipals)+len(spec.DenyPrincipals) == 0 {
				return fmt.Errorf("name a resource or a principal to delete (no flags would delete every ACL)")
			}
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				acls, err := c.DeleteACLs(ctx, spec)
				if err != nil {
					return err
				}
				return printACLs(cmd.OutOrStdout(), f.json(), acls)
			})
		},
	}
	addACLFlags(cmd.Flags(), &spec, true)
	return cmd
}

func printACLs(w io.Writer, asJSON bool, acls []admin.ACL) error {
	if asJSON {
		if acls == nil {
			acls = []admin.ACL{}
		}
		return writeJSON(w, acls)
	}
	rows := make([][]string, 0, len(acls))
	for _, a := range acls {
		rows = append(rows, []string{a.Principal, a.Host, a.ResourceType, a.ResourceName, a.PatternType, a.Operation, a.Permission})
	}
	return table(w, []string{"PRINCIPAL", "HOST", "RESOURCE-TYPE", "RESOURCE-NAME", "PATTERN", "OPERATION", "PERMISSION"}, rows)
}
