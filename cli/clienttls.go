package cli

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
)

// tlsFlags are the client subcommands' TLS flags. Each takes its default
// from a BROKERD_* variable (BROKERD_TLS, BROKERD_TLS_CA, BROKERD_TLS_CERT,
// BROKERD_TLS_KEY); the flag wins.
type tlsFlags struct {
	enabled             bool
	ca, cert, key       string
	enabledFromEnvError error
}

func addTLSFlags(fs *pflag.FlagSet) *tlsFlags {
	f := &tlsFlags{}
	on := false
	if v := os.Getenv("BROKERD_TLS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			f.enabledFromEnvError = fmt.Errorf("BROKERD_TLS=%q: want true or false", v)
		}
		on = b
	}
	fs.BoolVar(&f.enabled, "tls", on, "connect to the brokers with TLS (an SSL listener); also $BROKERD_TLS")
	fs.StringVar(&f.ca, "tls-ca", os.Getenv("BROKERD_TLS_CA"), "PEM file of the CAs to trust for the brokers' certificates (default: the system's); implies --tls; also $BROKERD_TLS_CA")
	fs.StringVar(&f.cert, "tls-cert", os.Getenv("BROKERD_TLS_CERT"), "PEM client certificate, for ssl.client.auth; needs --tls-key; implies --tls; also $BROKERD_TLS_CERT")
	fs.StringVar(&f.key, "tls-key", os.Getenv("BROKERD_TLS_KEY"), "PEM private key of --tls-cert; also $BROKERD_TLS_KEY")
	return f
}

// config is the TLS configuration the flags ask for, or nil for plaintext.
func (f *tlsFlags) config() (*tls.Config, error) {
	if f.enabledFromEnvError != nil {
		return nil, f.enabledFromEnvError
	}
	if !f.enabled && f.ca == "" && f.cert == "" && f.key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.ca != "" {
		data, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in the file", f.ca)
		}
		cfg.RootCAs = pool
	}
	if (f.cert == "") != (f.key == "") {
		return nil, fmt.Errorf("give --tls-cert and --tls-key together")
	}
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// kgoOpts are the franz-go options for the flags: DialTLSConfig with TLS.
func (f *tlsFlags) kgoOpts() ([]kgo.Opt, error) {
	cfg, err := f.config()
	if err != nil || cfg == nil {
		return nil, err
	}
	return []kgo.Opt{kgo.DialTLSConfig(cfg)}, nil
}
