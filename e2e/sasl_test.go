package e2e

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/brokerd/brokerd/broker"
	"github.com/brokerd/brokerd/internal/node"
	"github.com/brokerd/brokerd/internal/tlsconf"
)

// startSASLNode starts a node with PLAINTEXT, SASL_PLAINTEXT and SASL_SSL
// listeners, all three mechanisms enabled, and the bootstrap user admin
// (password "secret") under both SCRAM mechanisms.
func startSASLNode(t *testing.T, f *tlsFixture, tweak ...func(*node.Config)) *testNode {
	return startNode(t, append([]func(*node.Config){func(cfg *node.Config) {
		cfg.Listeners = []node.Listener{
			{Name: "PLAINTEXT", Protocol: node.ProtocolPlaintext, Addr: "127.0.0.1:0"},
			{Name: "SASL_PLAINTEXT", Protocol: node.ProtocolSASLPlaintext, Addr: "127.0.0.1:0"},
			{Name: "SASL_SSL", Protocol: node.ProtocolSASLSSL, Addr: "127.0.0.1:0"},
		}
		cfg.TLS = tlsconf.Config{KeystoreLocation: f.server.Keystore}
		cfg.SASLMechanisms = []string{"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"}
		cfg.SASLBootstrapUsers = []node.BootstrapUser{
			{Name: "admin", Mechanism: "SCRAM-SHA-256", Password: "secret"},
			{Name: "admin", Mechanism: "SCRAM-SHA-512", Password: "secret"},
		}
	}}, tweak...)...)
}

// waitUser waits until n has applied a credential for user.
func waitUser(t *testing.T, n *node.Node, user, mech string) {
	t.Helper()
	waitUntil(t, 10*time.Second, "user "+user+" "+mech, func() bool {
		_, ok := n.Store().ScramCredential(user, mech)
		return ok
	})
}

// TestSASLFranzGo: franz-go with SCRAM-SHA-256 and SCRAM-SHA-512 over
// SASL_SSL and PLAIN over SASL_PLAINTEXT; the principal is User:admin.
func TestSASLFranzGo(t *testing.T) {
	f := newTLSFixture(t)
	// Only User:admin may do anything: the clients below are served only
	// if they authenticated as admin.
	n := startSASLNode(t, f, func(cfg *node.Config) {
		cfg.Authorizer = broker.AuthorizerConfig{Enabled: true, SuperUsers: []string{"User:admin"}}
	})
	waitUser(t, n.Node, "admin", "SCRAM-SHA-512")
	auth := scram.Auth{User: "admin", Pass: "secret"}
	produceConsume(t, n.ListenerAddr("SASL_SSL"), "scram256", 10, kgo.DialTLSConfig(f.clientTLS(false)), kgo.SASL(auth.AsSha256Mechanism()))
	produceConsume(t, n.ListenerAddr("SASL_SSL"), "scram512", 10, kgo.DialTLSConfig(f.clientTLS(false)), kgo.SASL(auth.AsSha512Mechanism()))
	produceConsume(t, n.ListenerAddr("SASL_PLAINTEXT"), "plain", 10, kgo.SASL(plain.Auth{User: "admin", Pass: "secret"}.AsMechanism()))
	if !strings.Contains(n.logs.String(), "created SASL bootstrap user") || strings.Contains(n.logs.String(), "secret") {
		t.Errorf("bootstrap users: the log lacks the creation or holds the password")
	}
}

// TestSASLWrongPassword: a wrong password fails with
// SASL_AUTHENTICATION_FAILED and Kafka's message, after the delay.
func TestSASLWrongPassword(t *testing.T) {
	f := newTLSFixture(t)
	n := startSASLNode(t, f)
	waitUser(t, n.Node, "admin", "SCRAM-SHA-256")
	for _, tc := range []struct {
		name, addr, mech string
		opts             []kgo.Opt
	}{
		{"scram", n.ListenerAddr("SASL_SSL"), "SCRAM-SHA-256", []kgo.Opt{kgo.DialTLSConfig(f.clientTLS(false)), kgo.SASL(scram.Auth{User: "admin", Pass: "wrong"}.AsSha256Mechanism())}},
		{"plain", n.ListenerAddr("SASL_PLAINTEXT"), "PLAIN", []kgo.Opt{kgo.SASL(plain.Auth{User: "admin", Pass: "wrong"}.AsMechanism())}},
		{"unknown user", n.ListenerAddr("SASL_PLAINTEXT"), "SCRAM-SHA-512", []kgo.Opt{kgo.SASL(scram.Auth{User: "nobody", Pass: "x"}.AsSha512Mechanism())}},
	} {
		cl := newKgo(t, tc.addr, append(tc.opts, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))...)
		start := time.Now()
		_, err := cl.Request(testCtx(t, 10*time.Second), kmsg.NewPtrMetadataRequest())
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s: got %v, want SASL_AUTHENTICATION_FAILED", tc.name, err)
		}
		if want := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + tc.mech; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v lacks %q", tc.name, err, want)
		}
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Errorf("%s: failed after %s, before connection.failed.authentication.delay.ms", tc.name, d)
		}
	}
}

// saslConn is a bare TCP connection speaking Kafka frames.
type saslConn struct {
	t    *testing.T
	nc   net.Conn
	br   *bufio.Reader
	corr int32
}

func dialSASL(t *testing.T, addr string) *saslConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &saslConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// send writes a request at version v.
func (c *saslConn) send(req kmsg.Request, v int16) {
	c.t.Helper()
	req.SetVersion(v)
	c.corr++
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(v))
	body = binary.BigEndian.AppendUint32(body, uint32(c.corr))
	body = binary.BigEndian.AppendUint16(body, 3)
	body = append(body, "raw"...)
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := c.nc.Write(append(frame, body...)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// recv reads one frame; an error means the connection closed.
func (c *saslConn) recv() ([]byte, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [4]byte
	if _, err := io.ReadFull(c.br, b[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(b[:]))
	_, err := io.ReadFull(c.br, buf)
	return buf, err
}

// roundTrip sends req and decodes the response into resp.
func (c *saslConn) roundTrip(req kmsg.Request, v int16, resp kmsg.Response) {
	c.t.Helper()
	c.send(req, v)
	buf, err := c.recv()
	if err != nil {
		c.t.Fatalf("api key %d: %v", req.Key(), err)
	}
	resp.SetVersion(v)
	body := buf[4:]
	if resp.IsFlexible() {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode response to api key %d: %v", req.Key(), err)
	}
}

// closed reports whether the broker closed the connection.
func (c *saslConn) closed() bool {
	_, err := c.recv()
	return err != nil && !errors.Is(err, saslTimeoutErr(err))
}

func saslTimeoutErr(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	return errors.New("not a timeout")
}

// plainAuth authenticates a raw connection with PLAIN (handshake v1) and
// returns the SaslAuthenticate v1 response.
func (c *saslConn) plainAuth(user, pass string) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	c.roundTrip(hs, 1, hsr)
	if hsr.ErrorCode != 0 {
		c.t.Fatalf("handshake: error %d", hsr.ErrorCode)
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SASLAuthBytes = []byte("\x00" + user + "\x00" + pass)
	aur := kmsg.NewPtrSASLAuthenticateResponse()
	c.roundTrip(au, 1, aur)
	return aur
}

// TestSASLUnauthenticated: before authenticating, Metadata and Produce
// close the connection, ApiVersions is answered, a 100 MiB frame is cut
// off before anything is allocated, and a handshake on PLAINTEXT gets
// ILLEGAL_SASL_STATE.
func TestSASLUnauthenticated(t *testing.T) {
	f := newTLSFixture(t)
	n := startSASLNode(t, f)
	addr := n.ListenerAddr("SASL_PLAINTEXT")

	c := dialSASL(t, addr)
	c.roundTrip(kmsg.NewPtrApiVersionsRequest(), 0, kmsg.NewPtrApiVersionsResponse())
	c.send(kmsg.NewPtrMetadataRequest(), 4)
	if !c.closed() {
		t.Error("an unauthenticated Metadata was not closed")
	}
	c = dialSASL(t, addr)
	p := kmsg.NewPtrProduceRequest()
	p.Acks = -1
	c.send(p, 7)
	if !c.closed() {
		t.Error("an unauthenticated Produce was not closed")
	}

	// A 100 MiB SaslAuthenticate frame, a request allowed before
	// authentication: only its size prefix and api key arrive, and the
	// pre-authentication cap refuses it.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c = dialSASL(t, addr)
	hdr := binary.BigEndian.AppendUint32(nil, 100<<20)
	hdr = append(hdr, 0, 36, 0, 1, 0, 0, 0, 1)
	start := time.Now()
	if _, err := c.nc.Write(hdr); err != nil {
		t.Fatal(err)
	}
	if !c.closed() || time.Since(start) > 3*time.Second {
		t.Fatal("a 100 MiB pre-authentication frame was not cut off at once")
	}
	waitUntil(t, 5*time.Second, "the cap's refusal logged", func() bool {
		return strings.Contains(n.logs.String(), "frame of 104857600 bytes before SASL authentication, above the 16384-byte limit")
	})
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 50<<20 {
		t.Errorf("the broker allocated %d bytes for a cut-off frame", grew)
	}

	// Unsupported mechanism: the enabled list comes back.
	c = dialSASL(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "GSSAPI"
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	c.roundTrip(hs, 1, hsr)
	if hsr.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(hsr.SupportedMechanisms, ",") != "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN" {
		t.Errorf("GSSAPI: error %d mechanisms %v", hsr.ErrorCode, hsr.SupportedMechanisms)
	}

	// A handshake on PLAINTEXT: ILLEGAL_SASL_STATE, and the connection
	// goes on.
	c = dialSASL(t, n.ListenerAddr("PLAINTEXT"))
	hs.Mechanism = "PLAIN"
	c.roundTrip(hs, 1, hsr)
	if hsr.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("handshake on PLAINTEXT: error %d", hsr.ErrorCode)
	}
	c.roundTrip(kmsg.NewPtrMetadataRequest(), 4, kmsg.NewPtrMetadataResponse())
}

// TestSASLReauth: with connections.max.reauth.ms, SaslAuthenticate v1
// gives the session lifetime, a connection that does not re-authenticate
// is closed at its first request after it, one that re-authenticates goes
// on, and franz-go re-authenticates by itself.
func TestSASLReauth(t *testing.T) {
	f := newTLSFixture(t)
	n := startSASLNode(t, f, func(cfg *node.Config) { cfg.Wire.ReauthAfter = 2 * time.Second })
	waitUser(t, n.Node, "admin", "SCRAM-SHA-512")
	addr := n.ListenerAddr("SASL_PLAINTEXT")

	stale := dialSASL(t, addr)
	fresh := dialSASL(t, addr)
	for _, c := range []*saslConn{stale, fresh} {
		if r := c.plainAuth("admin", "secret"); r.ErrorCode != 0 || r.SessionLifetimeMillis != 2000 {
			t.Fatalf("authenticate: error %d lifetime %d", r.ErrorCode, r.SessionLifetimeMillis)
		}
		c.roundTrip(kmsg.NewPtrMetadataRequest(), 4, kmsg.NewPtrMetadataResponse())
	}
	time.Sleep(1500 * time.Millisecond)
	if r := fresh.plainAuth("admin", "secret"); r.ErrorCode != 0 {
		t.Fatalf("re-authenticate: error %d", r.ErrorCode)
	}
	time.Sleep(700 * time.Millisecond)
	fresh.roundTrip(kmsg.NewPtrMetadataRequest(), 4, kmsg.NewPtrMetadataResponse())
	stale.send(kmsg.NewPtrMetadataRequest(), 4)
	if !stale.closed() {
		t.Error("a connection past its session lifetime was served")
	}

	// franz-go keeps producing across several lifetimes.
	cl := newKgo(t, addr, kgo.SASL(scram.Auth{User: "admin", Pass: "secret"}.AsSha512Mechanism()), kgo.DefaultProduceTopic("reauth"), kgo.AllowAutoTopicCreation())
	ctx := testCtx(t, 30*time.Second)
	for i := range 12 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestSASLKcat: kcat (librdkafka) produces and consumes over SASL_SSL
// with each mechanism. librdkafka before 2.6.1 (2.0.2 here) sends its
// SCRAM client-final nonce doubled (broker/sasl/scram_legacy.go).
func TestSASLKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed")
	}
	f := newTLSFixture(t)
	n := startSASLNode(t, f)
	waitUser(t, n.Node, "admin", "SCRAM-SHA-256")
	waitUser(t, n.Node, "admin", "SCRAM-SHA-512")
	run := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(kcat, args...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"} {
		t.Run(mech, func(t *testing.T) {
			base := []string{"-b", n.ListenerAddr("SASL_SSL"), "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + mech,
				"-X", "ssl.ca.location=" + f.ca.CAFile, "-X", "sasl.username=admin"}
			topic := "kcat-sasl-" + strings.ToLower(mech)
			if out, err := run("one\ntwo\n", append(base, "-X", "sasl.password=secret", "-P", "-t", topic)...); err != nil {
				t.Fatalf("kcat produce: %v\n%s", err, out)
			}
			out, err := run("", append(base, "-X", "sasl.password=secret", "-C", "-t", topic, "-o", "beginning", "-e", "-c", "2", "-q")...)
			if err != nil || strings.Join(strings.Fields(out), " ") != "one two" {
				t.Fatalf("kcat consume: %v %q", err, out)
			}
			if out, err := run("", append(base, "-X", "sasl.password=wrong", "-L", "-m", "5")...); err == nil {
				t.Errorf("kcat with a wrong password listed metadata: %s", out)
			}
		})
	}
}

// kafkaPythonScript produces and consumes with kafka-python over SASL_SSL;
// its handshake is v0, so the tokens travel as bare frames.
const kafkaPythonScript = `
import sys
from kafka import KafkaProducer, KafkaConsumer
addr, ca, mech = sys.argv[1], sys.argv[2], sys.argv[3]
common = dict(bootstrap_servers=addr, security_protocol="SASL_SSL", ssl_cafile=ca, ssl_check_hostname=False,
              sasl_mechanism=mech, sasl_plain_username="admin", sasl_plain_password="secret", api_version=(2, 5, 0))
topic = "kafka-python-" + mech.lower()
p = KafkaProducer(acks="all", **common)
for i in range(5):
    p.send(topic, ("v%d" % i).encode())
p.flush(30)
c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10000, **common)
got = [m.value.decode() for m in c]
if got[:5] != ["v%d" % i for i in range(5)]:
    sys.exit("consumed %r" % got)
print("ok")
`

// TestSASLKafkaPython: kafka-python with SCRAM-SHA-256 and with PLAIN over
// SASL_SSL.
func TestSASLKafkaPython(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import kafka").Run(); err != nil {
		t.Skip("kafka-python (python3-kafka) is not installed")
	}
	f := newTLSFixture(t)
	n := startSASLNode(t, f)
	waitUser(t, n.Node, "admin", "SCRAM-SHA-256")
	for _, mech := range []string{"SCRAM-SHA-256", "PLAIN"} {
		out, err := exec.Command("/usr/bin/python3", "-c", kafkaPythonScript, n.ListenerAddr("SASL_SSL"), f.ca.CAFile, mech).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ok") {
			t.Errorf("kafka-python %s: %v\n%s", mech, err, out)
		}
	}
}

// TestSASLClusterReplication: a user created through kadm on the leader
// reaches every node of a 3-node cluster, and authenticates there.
func TestSASLClusterReplication(t *testing.T) {
	nodes := startCluster(t, 3)
	var leader *node.Node
	waitUntil(t, 20*time.Second, "a leader", func() bool {
		for _, n := range nodes {
			if n.Store().IsLeader() {
				leader = n
				return true
			}
		}
		return false
	})
	adm := kadm.NewClient(newKgo(t, leader.KafkaAddr()))
	res, err := adm.AlterUserSCRAMs(testCtx(t, 20*time.Second), nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "pw"}})
	if err != nil || res["carol"].Err != nil {
		t.Fatalf("alter: %v %+v", err, res)
	}
	for _, n := range nodes {
		waitUser(t, n, "carol", "SCRAM-SHA-512")
	}
	described, err := adm.DescribeUserSCRAMs(testCtx(t, 10*time.Second), "carol", "nobody")
	if err != nil || len(described["carol"].CredInfos) != 1 || described["carol"].CredInfos[0].Iterations != 8192 || !errors.Is(described["nobody"].Err, kerr.ResourceNotFound) {
		t.Fatalf("describe: %v %+v", err, described)
	}
	// Kafka's codes: a user twice, a missing deletion, too few iterations.
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "nobody", 1
	dup := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	dup.Name, dup.Mechanism = "carol", 1
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "carol", 2, 8192, []byte("s"), make([]byte, 64)
	weak := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	weak.Name, weak.Mechanism, weak.Iterations, weak.Salt, weak.SaltedPassword = "dave", 1, 100, []byte("s"), make([]byte, 32)
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del, dup}
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up, weak}
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), newKgo(t, leader.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int16{"nobody": kerr.ResourceNotFound.Code, "carol": kerr.DuplicateResource.Code, "dave": kerr.UnacceptableCredential.Code}
	for _, r := range resp.Results {
		if want[r.User] != r.ErrorCode {
			t.Errorf("%s: error %d, want %d", r.User, r.ErrorCode, want[r.User])
		}
	}
	// A follower answers NOT_CONTROLLER for each user, sorted, before
	// validating anything, as Kafka does (franz-go retries on the first
	// result). It answered DUPLICATE_RESOURCE for carol first.
	for _, n := range nodes {
		if n == leader {
			continue
		}
		resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
		dialSASL(t, n.KafkaAddr()).roundTrip(req, 0, resp)
		var users []string
		for _, r := range resp.Results {
			users = append(users, r.User)
			if r.ErrorCode != kerr.NotController.Code {
				t.Errorf("follower: %s: error %d, want NOT_CONTROLLER", r.User, r.ErrorCode)
			}
		}
		if got := strings.Join(users, ","); got != "carol,dave,nobody" {
			t.Errorf("follower: results for %s", got)
		}
		break
	}
}
