package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/brokerd/brokerd/clients/admin"
)

func newUserCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Create, list and delete SASL/SCRAM users",
		Long: "user manages SCRAM credentials with Kafka's AlterUserScramCredentials and\n" +
			"DescribeUserScramCredentials. The password is salted here and never sent.\n" +
			"--user/--password are the credentials this command authenticates with;\n" +
			"the new user's password is --new-password.",
		Args: cobra.NoArgs,
	}
	f := addClientFlags(cmd.PersistentFlags(), true)
	cmd.AddCommand(newUserCreateCmd(f), newUserListCmd(f), newUserDeleteCmd(f))
	return cmd
}

func newUserCreateCmd(f *clientFlags) *cobra.Command {
	var (
		password   string
		mechanism  string
		iterations int32
		update     bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME --new-password PASSWORD",
		Short: "Create a SCRAM user, or with --update change its password",
		Example: "  brokerd user create alice --new-password s3cret\n" +
			"  printf %s \"$PW\" | brokerd user create alice --new-password - --mechanism SCRAM-SHA-512 --iterations 8192",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pw, err := readNewPassword(cmd.InOrStdin(), password)
			if err != nil {
				return err
			}
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				cr, err := c.CreateUser(ctx, args[0], mechanism, pw, iterations, update)
				if errors.Is(err, admin.ErrUserExists) {
					return fmt.Errorf("%w (give --update to change its password)", err)
				}
				if err != nil {
					return err
				}
				if f.json() {
					return writeJSON(cmd.OutOrStdout(), admin.User{Name: args[0], Credentials: []admin.UserCredential{cr}})
				}
				verb := "created"
				if update {
					verb = "updated"
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s user %s (%s, %d iterations)\n", verb, args[0], cr.Mechanism, cr.Iterations)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&password, "new-password", "", "the user's password; - reads it from standard input (first line)")
	cmd.Flags().StringVar(&mechanism, "mechanism", "SCRAM-SHA-256", "SCRAM-SHA-256 or SCRAM-SHA-512")
	cmd.Flags().Int32Var(&iterations, "iterations", 4096, "SCRAM iterations, 4096-16384")
	cmd.Flags().BoolVar(&update, "update", false, "replace the password of an existing user")
	_ = cmd.MarkFlagRequired("new-password")
	return cmd
}

// readNewPassword is --new-password, or with "-" the first line of in.
func readNewPassword(in io.Reader, flag string) (string, error) {
	if flag != "-" {
		if flag == "" {
			return "", errors.New("--new-password: empty password")
		}
		return flag, nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password from standard input: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", errors.New("--new-password -: standard input has no password")
	}
	return pw, nil
}

func newUserListCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List SCRAM users and their mechanisms",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				us, err := c.ListUsers(ctx)
				if err != nil {
					return err
				}
				if f.json() {
					return writeJSON(cmd.OutOrStdout(), us)
				}
				var rows [][]string
				for _, u := range us {
					for _, cr := range u.Credentials {
						rows = append(rows, []string{u.Name, cr.Mechanism, fmt.Sprint(cr.Iterations)})
					}
				}
				return table(cmd.OutOrStdout(), []string{"USER", "MECHANISM", "ITERATIONS"}, rows)
			})
		},
	}
}

func newUserDeleteCmd(f *clientFlags) *cobra.Command {
	var mechanism string
	cmd := &cobra.Command{
		Use:     "delete NAME",
		Aliases: []string{"rm"},
		Short:   "Delete a user's SCRAM credentials (all, or one --mechanism)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if mechanism != "" {
				if _, err := admin.ScramMechanism(mechanism); err != nil {
					return fmt.Errorf("--mechanism: %w", err)
				}
			}
			return f.withAdmin(cmd, func(ctx context.Context, c *admin.Client) error {
				mechs, err := c.DeleteUser(ctx, args[0], mechanism)
				if err != nil {
					return err
				}
				if f.json() {
					return writeJSON(cmd.OutOrStdout(), map[string]any{"name": args[0], "mechanisms": mechs})
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "deleted user %s (%s)\n", args[0], strings.Join(mechs, ", "))
				return err
			})
		},
	}
	cmd.Flags().StringVar(&mechanism, "mechanism", "", "delete only this mechanism's credential (default: all)")
	return cmd
}
