package e2e

import (
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTLSProc starts a brokerd process with a PLAINTEXT and an SSL
// listener (ssl.client.auth=requested) on f's certificates, and returns
// it with the SSL listener's address.
func startTLSProc(t *testing.T, f *tlsFixture) (*brokerProc, string) {
	b := newBrokerProc(t)
	ssl := "127.0.0.1:" + strconv.Itoa(freePort(t))
	b.extraArgs = []string{
		"--override", "listeners=PLAINTEXT://" + b.kafkaAddr() + ",SSL://" + ssl,
		"--override", "ssl.keystore.location=" + f.server.Keystore,
		"--override", "ssl.truststore.location=" + f.ca.CAFile,
		"--override", "ssl.client.auth=requested",
	}
	b.start()
	return b, ssl
}

// servedCN is the common name of the certificate the SSL listener serves
// to a new connection.
func servedCN(t *testing.T, f *tlsFixture, addr string) string {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, f.clientTLS(false))
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// TestTLSReloadOnSIGHUP: SIGHUP makes new connections get the certificate
// now in the key store file; a broken file keeps the one in use, and the
// process goes on serving.
func TestTLSReloadOnSIGHUP(t *testing.T) {
	f := newTLSFixture(t)
	b, ssl := startTLSProc(t, f)
	if cn := servedCN(t, f, ssl); cn != "broker-1" {
		t.Fatalf("served %q, want broker-1", cn)
	}
	next := f.ca.Server("next", "broker-2")
	data, err := os.ReadFile(next.Keystore)
	if err != nil {
		t.Fatal(err)
	}
	// Replace the file as an operator would: write aside, rename over.
	replace := func(data []byte) {
		tmp := f.server.Keystore + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f.server.Keystore); err != nil {
			t.Fatal(err)
		}
	}
	replace(data)
	if cn := servedCN(t, f, ssl); cn != "broker-1" {
		t.Fatalf("before SIGHUP: served %q, want broker-1 still", cn)
	}
	if err := b.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the new certificate served after SIGHUP", func() bool { return servedCN(t, f, ssl) == "broker-2" })

	replace([]byte("-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n"))
	if err := b.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the failed reload logged", func() bool { return strings.Contains(b.logTail(4096), "TLS reload failed") })
	if cn := servedCN(t, f, ssl); cn != "broker-2" {
		t.Fatalf("after a failed reload: served %q, want broker-2", cn)
	}
	if !b.running() {
		t.Fatal("brokerd stopped after a failed reload")
	}
	produceConsume(t, ssl, "after-reload", 5, kgoTLS(f, false)...)
}

// TestTLSKcat: kcat (librdkafka) produces and consumes over SSL, with and
// without a client certificate.
func TestTLSKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed")
	}
	f := newTLSFixture(t)
	_, ssl := startTLSProc(t, f)
	base := []string{"-b", ssl, "-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + f.ca.CAFile}
	withCert := append(append([]string{}, base...), "-X", "ssl.certificate.location="+f.client.CertFile, "-X", "ssl.key.location="+f.client.KeyFile)
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(kcat, args...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("one\ntwo\n", append(base, "-P", "-t", "kcat-tls")...)
	run("three\n", append(withCert, "-P", "-t", "kcat-tls")...)
	for _, args := range [][]string{base, withCert} {
		out := run("", append(args, "-C", "-t", "kcat-tls", "-o", "beginning", "-e", "-c", "3", "-q")...)
		if strings.Fields(out) == nil || strings.Join(strings.Fields(out), " ") != "one two three" {
			t.Errorf("kcat consumed %q, want one two three", out)
		}
	}
}

// TestTLSCLI: the client subcommands connect over SSL with --tls-ca, and
// with a client certificate given by BROKERD_TLS_CERT and BROKERD_TLS_KEY.
func TestTLSCLI(t *testing.T) {
	f := newTLSFixture(t)
	b, ssl := startTLSProc(t, f)
	run := func(env []string, stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(b.bin, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("brokerd %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(nil, "", "topic", "create", "cli-tls", "-b", ssl, "--tls-ca", f.ca.CAFile)
	if out := run(nil, "", "topic", "list", "-b", ssl, "--tls", "--tls-ca", f.ca.CAFile); !strings.Contains(out, "cli-tls") {
		t.Errorf("topic list over TLS: %q", out)
	}
	certEnv := []string{"BROKERD_TLS=true", "BROKERD_TLS_CA=" + f.ca.CAFile, "BROKERD_TLS_CERT=" + f.client.CertFile, "BROKERD_TLS_KEY=" + f.client.KeyFile}
	run(certEnv, "a\nb\n", "produce", "cli-tls", "-b", ssl)
	if out := run(certEnv, "", "consume", "cli-tls", "-b", ssl, "-e", "-n", "2"); strings.Join(strings.Fields(out), " ") != "a b" {
		t.Errorf("consume over TLS: %q", out)
	}
	// Without --tls the SSL listener is not spoken to.
	cmd := exec.Command(b.bin, "topic", "list", "-b", ssl, "--timeout", "3s")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("a plaintext topic list on the SSL listener succeeded: %s", out)
	}
}
