package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// UserCredential is one SCRAM mechanism a user has a password for.
type UserCredential struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

// User is a SASL/SCRAM user and its credentials (never a password).
type User struct {
	Name        string           `json:"name"`
	Credentials []UserCredential `json:"credentials"`
}

// ErrUserExists: CreateUser without replace found a credential of that
// mechanism.
var ErrUserExists = errors.New("user already has a credential for this mechanism")

// ErrNoSuchUser: the user has no SCRAM credential (of that mechanism).
var ErrNoSuchUser = errors.New("no such user")

// ScramMechanism parses SCRAM-SHA-256 or SCRAM-SHA-512 (any case).
func ScramMechanism(name string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(name) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", name)
}

// ListUsers describes every user with a SCRAM credential, sorted by name.
func (c *Client) ListUsers(ctx context.Context) ([]User, error) {
	return c.describeUsers(ctx)
}

// describeUsers describes the named users (none: all). A user without a
// credential is left out of the answer.
func (c *Client) describeUsers(ctx context.Context, names ...string) ([]User, error) {
	ds, err := c.adm.DescribeUserSCRAMs(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe users: %w", err)
	}
	out := make([]User, 0, len(ds))
	for _, d := range ds.Sorted() {
		if errors.Is(d.Err, kerr.ResourceNotFound) {
			continue
		}
		if d.Err != nil {
			return nil, fmt.Errorf("describe user %s: %w", d.User, withMessage(d.Err, d.ErrMessage))
		}
		u := User{Name: d.User}
		for _, ci := range d.CredInfos {
			u.Credentials = append(u.Credentials, UserCredential{Mechanism: ci.Mechanism.String(), Iterations: ci.Iterations})
		}
		slices.SortFunc(u.Credentials, func(a, b UserCredential) int { return strings.Compare(a.Mechanism, b.Mechanism) })
		out = append(out, u)
	}
	return out, nil
}

// CreateUser gives a user a SCRAM credential for the password (salted
// client-side; the password is never sent). iterations 0 takes Kafka's
// minimum, 4096. Unless replace, a user that already has a credential of
// that mechanism is ErrUserExists.
func (c *Client) CreateUser(ctx context.Context, name, mechanism, password string, iterations int32, replace bool) (UserCredential, error) {
	mech, err := ScramMechanism(mechanism)
	if err != nil {
		return UserCredential{}, err
	}
	if password == "" {
		return UserCredential{}, errors.New("create user: empty password")
	}
	if !replace {
		us, err := c.describeUsers(ctx, name)
		if err != nil {
			return UserCredential{}, err
		}
		if has(us, mech.String()) {
			return UserCredential{}, fmt.Errorf("user %s (%s): %w", name, mech, ErrUserExists)
		}
	}
	if iterations == 0 {
		iterations = 4096
	}
	up := kadm.UpsertSCRAM{User: name, Mechanism: mech, Iterations: iterations, Password: password}
	if err := alterUsers(ctx, c.adm, nil, []kadm.UpsertSCRAM{up}); err != nil {
		return UserCredential{}, fmt.Errorf("create user %s: %w", name, err)
	}
	return UserCredential{Mechanism: mech.String(), Iterations: iterations}, nil
}

// DeleteUser removes a user's credential of one mechanism, or with
// mechanism "" every credential it has; it returns the mechanisms
// removed. A user without one is ErrNoSuchUser.
func (c *Client) DeleteUser(ctx context.Context, name, mechanism string) ([]string, error) {
	us, err := c.describeUsers(ctx, name)
	if err != nil {
		return nil, err
	}
	var del []kadm.DeleteSCRAM
	var names []string
	for _, u := range us {
		for _, cr := range u.Credentials {
			if mechanism != "" && !strings.EqualFold(cr.Mechanism, mechanism) {
				continue
			}
			m, err := ScramMechanism(cr.Mechanism)
			if err != nil {
				return nil, err
			}
			del = append(del, kadm.DeleteSCRAM{User: name, Mechanism: m})
			names = append(names, cr.Mechanism)
		}
	}
	if len(del) == 0 {
		what := name
		if mechanism != "" {
			what += " (" + strings.ToUpper(mechanism) + ")"
		}
		return nil, fmt.Errorf("delete user %s: %w", what, ErrNoSuchUser)
	}
	if err := alterUsers(ctx, c.adm, del, nil); err != nil {
		return nil, fmt.Errorf("delete user %s: %w", name, err)
	}
	return names, nil
}

// alterUsers sends one AlterUserScramCredentials and returns the first
// per-user error.
func alterUsers(ctx context.Context, adm *kadm.Client, del []kadm.DeleteSCRAM, up []kadm.UpsertSCRAM) error {
	rs, err := adm.AlterUserSCRAMs(ctx, del, up)
	if err != nil {
		return err
	}
	for _, r := range rs.Sorted() {
		if r.Err != nil {
			return withMessage(r.Err, r.ErrMessage)
		}
	}
	return nil
}

func has(us []User, mechanism string) bool {
	for _, u := range us {
		for _, cr := range u.Credentials {
			if cr.Mechanism == mechanism {
				return true
			}
		}
	}
	return false
}

// withMessage adds a broker's error message to its error code.
func withMessage(err error, msg string) error {
	if msg == "" || strings.Contains(err.Error(), msg) {
		return err
	}
	return fmt.Errorf("%w: %s", err, msg)
}
