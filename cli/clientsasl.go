package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// saslFlags are the client subcommands' SASL flags. Each falls back to a
// BROKERD_* variable (BROKERD_USER, BROKERD_PASSWORD,
// BROKERD_SASL_MECHANISM) when not given. The variables are read when the
// command runs, not as flag defaults, so --help never prints a password.
type saslFlags struct {
	user, password, mechanism string
}

func addSASLFlags(fs *pflag.FlagSet) *saslFlags {
	f := &saslFlags{}
	fs.StringVar(&f.user, "user", "", "SASL user name (a SASL_PLAINTEXT or SASL_SSL listener); also $BROKERD_USER")
	fs.StringVar(&f.password, "password", "", "SASL password; also $BROKERD_PASSWORD (which keeps it out of the process list)")
	fs.StringVar(&f.mechanism, "sasl-mechanism", "", "SCRAM-SHA-256 (default with --user), SCRAM-SHA-512 or PLAIN; also $BROKERD_SASL_MECHANISM")
	return f
}

// resolved fills what the flags leave empty from the environment and
// checks the combination. An empty user means no SASL.
func (f *saslFlags) resolved() (user, password, mechanism string, err error) {
	user, password, mechanism = f.user, f.password, f.mechanism
	if user == "" {
		user = os.Getenv("BROKERD_USER")
	}
	if password == "" {
		password = os.Getenv("BROKERD_PASSWORD")
	}
	if mechanism == "" {
		mechanism = os.Getenv("BROKERD_SASL_MECHANISM")
	}
	mechanism = strings.ToUpper(strings.TrimSpace(mechanism))
	if user == "" {
		if f.password != "" || f.mechanism != "" {
			return "", "", "", errors.New("--password and --sasl-mechanism need --user (or $BROKERD_USER)")
		}
		return "", "", "", nil
	}
	if password == "" {
		return "", "", "", fmt.Errorf("--user %s: give --password (or $BROKERD_PASSWORD)", user)
	}
	switch mechanism {
	case "":
		mechanism = "SCRAM-SHA-256"
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		return "", "", "", fmt.Errorf("--sasl-mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mechanism)
	}
	return user, password, mechanism, nil
}

// kgoOpts are the franz-go options for the flags: kgo.SASL with a user.
func (f *saslFlags) kgoOpts() ([]kgo.Opt, error) {
	user, password, mechanism, err := f.resolved()
	if err != nil || user == "" {
		return nil, err
	}
	var m sasl.Mechanism
	switch mechanism {
	case "PLAIN":
		m = plain.Auth{User: user, Pass: password}.AsMechanism()
	case "SCRAM-SHA-512":
		m = scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	default:
		m = scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	}
	return []kgo.Opt{kgo.SASL(m)}, nil
}

// explain turns a failed authentication into an error that names the
// mechanism and the user (never the password); other errors pass as
// they are.
func (f *saslFlags) explain(err error) error {
	if err == nil {
		return nil
	}
	user, _, mechanism, rerr := f.resolved()
	if rerr != nil || user == "" {
		return err
	}
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Errorf("SASL %s authentication as user %q failed: wrong password, unknown user, or no %s credential for it: %w", mechanism, user, mechanism, err)
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return fmt.Errorf("SASL %s (user %q): the listener does not enable this mechanism (see sasl.enabled.mechanisms): %w", mechanism, user, err)
	case errors.Is(err, kerr.IllegalSaslState):
		return fmt.Errorf("SASL %s (user %q): the listener does not take SASL (a PLAINTEXT or SSL listener?): %w", mechanism, user, err)
	}
	return err
}
