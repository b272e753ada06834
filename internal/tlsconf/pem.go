package tlsconf

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// loadKeystore reads a PEM key store: one file holding the private key
// (PKCS#8, PKCS#1 or SEC 1, unencrypted) and the certificate chain, leaf
// first, as KIP-651's ssl.keystore.type=PEM.
func loadKeystore(path, key string) (*tls.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	var certPEM, keyPEM []byte
	rest := data
	for {
		b, r := pem.Decode(rest)
		if b == nil {
			break
		}
		rest = r
		switch {
		case b.Type == "CERTIFICATE":
			certPEM = append(certPEM, pem.EncodeToMemory(b)...)
		case b.Type == "ENCRYPTED PRIVATE KEY" || b.Headers["Proc-Type"] != "":
			return nil, fmt.Errorf("%s %s: the private key is encrypted; brokerd reads unencrypted PEM keys only (decrypt it: openssl pkey -in key.pem -out plain.pem)", key, path)
		case b.Type == "PRIVATE KEY" || b.Type == "RSA PRIVATE KEY" || b.Type == "EC PRIVATE KEY":
			if keyPEM != nil {
				return nil, fmt.Errorf("%s %s: more than one private key", key, path)
			}
			keyPEM = pem.EncodeToMemory(b)
		}
	}
	if err := wholeBlocks(path, key, rest); err != nil {
		return nil, err
	}
	if keyPEM == nil {
		return nil, fmt.Errorf("%s %s: no PEM private key in the file (it must hold the key and the certificate chain)", key, path)
	}
	if certPEM == nil {
		return nil, fmt.Errorf("%s %s: no PEM certificate in the file (it must hold the key and the certificate chain)", key, path)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", key, path, err)
	}
	return &cert, nil
}

// loadTruststore reads a PEM bundle of CA certificates.
func loadTruststore(path, key string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	pool := x509.NewCertPool()
	n := 0
	rest := data
	for {
		b, r := pem.Decode(rest)
		if b == nil {
			break
		}
		rest = r
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s %s: certificate %d: %w", key, path, n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if err := wholeBlocks(path, key, rest); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%s %s: %w", key, path, errors.New("no PEM certificate in the file"))
	}
	return pool, nil
}

// wholeBlocks refuses a file that goes on after its last whole PEM block:
// pem.Decode stops at the first block it cannot read, so a file caught
// half written (or cut short) would otherwise load without the rest of
// its chain or its CAs, and a reload would look successful.
func wholeBlocks(path, key string, rest []byte) error {
	if len(bytes.TrimSpace(rest)) == 0 {
		return nil
	}
	return fmt.Errorf("%s %s: %d bytes after the last whole PEM block do not read as one (a file half written or cut short?)", key, path, len(bytes.TrimSpace(rest)))
}
