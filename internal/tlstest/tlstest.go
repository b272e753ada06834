// Package tlstest makes certificates for tests: an in-test CA, server
// certificates for 127.0.0.1 and client certificates, written as PEM files
// in the form brokerd's ssl.keystore.location and clients read.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made for one test.
type CA struct {
	Cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	dir     string
	CAFile  string // the CA certificate, PEM
	serial  int64
	t       testing.TB
	Subject pkix.Name
}

// NewCA makes a CA and writes its certificate to dir/ca.pem.
func NewCA(t testing.TB, dir string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "brokerd test CA", Organization: []string{"brokerd tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("create CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{Cert: cert, key: key, dir: dir, CAFile: filepath.Join(dir, "ca.pem"), serial: 1, t: t, Subject: tmpl.Subject}
	writeFile(t, ca.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return ca
}

// Pair is a signed certificate with its key: Keystore holds both (the
// key first, then the certificate), CertFile and KeyFile each alone.
type Pair struct {
	Cert                        *x509.Certificate
	TLS                         tls.Certificate
	Keystore, CertFile, KeyFile string
}

// Server issues a server certificate for 127.0.0.1 and localhost, named
// name in the CA's directory.
func (ca *CA) Server(name, cn string) *Pair {
	return ca.issue(name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:    []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// Node issues a certificate a node uses both ways on links between nodes
// (raft, the admin API): server and client authentication, for 127.0.0.1
// and localhost.
func (ca *CA) Node(name, cn string) *Pair {
	return ca.issue(name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:    []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
}

// Client issues a client certificate with the subject given.
func (ca *CA) Client(name string, subject pkix.Name) *Pair {
	return ca.issue(name, &x509.Certificate{
		Subject:     subject,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

func (ca *CA) issue(name string, tmpl *x509.Certificate) *Pair {
	t := ca.t
	t.Helper()
	ca.serial++
	tmpl.SerialNumber = big.NewInt(ca.serial)
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	key := newKey(t)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("issue %s: %v", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	p := &Pair{
		Cert:     cert,
		Keystore: filepath.Join(ca.dir, name+".keystore.pem"),
		CertFile: filepath.Join(ca.dir, name+".crt"),
		KeyFile:  filepath.Join(ca.dir, name+".key"),
	}
	writeFile(t, p.Keystore, append(append([]byte{}, keyPEM...), certPEM...))
	writeFile(t, p.CertFile, certPEM)
	writeFile(t, p.KeyFile, keyPEM)
	if p.TLS, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	return p
}

// Pool is a pool holding the CA, for a client's RootCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	return key
}

func writeFile(t testing.TB, path string, data []byte) {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
