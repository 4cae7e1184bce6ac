// Package benchtls issues the certificates the load tests serve with (the
// same certgen graft serves with by default) and the client configuration
// that trusts them.
package benchtls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"path/filepath"

	"github.com/graftdev/graft/webhook/certgen"
)

// Files are the PEM files written.
type Files struct {
	CA, Cert, Key string
}

// Write issues a CA and a serving certificate for 127.0.0.1, ::1 and
// localhost into dir, and returns the files and a client TLS configuration
// trusting the CA.
func Write(dir string) (Files, *tls.Config, error) {
	b, err := certgen.Generate(certgen.Options{
		DNSNames: []string{"localhost"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	})
	if err != nil {
		return Files{}, nil, fmt.Errorf("benchtls: %w", err)
	}
	if err := b.Write(dir); err != nil {
		return Files{}, nil, fmt.Errorf("benchtls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b.CACert) {
		return Files{}, nil, errors.New("benchtls: CA certificate does not parse")
	}
	f := Files{
		CA:   filepath.Join(dir, certgen.CAFile),
		Cert: filepath.Join(dir, certgen.CertFile),
		Key:  filepath.Join(dir, certgen.KeyFile),
	}
	return f, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
