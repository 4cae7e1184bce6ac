// Package certgen makes the certificates graft serves with when none are
// given: a self-signed ECDSA P-256 CA and a serving certificate it signs.
// `graft serve` uses it at start without flags; `graft certs` writes the
// same files for the self-signed deploy overlay.
package certgen

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Options say what to issue.
type Options struct {
	// DNSNames and IPs are the serving certificate's SANs.
	DNSNames []string
	IPs      []net.IP
	// Validity of both certificates. Defaults to one year.
	Validity time.Duration
	// Now is the issue time; defaults to time.Now.
	Now func() time.Time
}

// Bundle is PEM-encoded output.
type Bundle struct {
	CACert  []byte // ca.crt: what the API server's caBundle holds
	TLSCert []byte // tls.crt: the serving certificate
	TLSKey  []byte // tls.key: its private key (PKCS#8)
}

// File names written by Write, matching a kubernetes.io/tls Secret.
const (
	CAFile   = "ca.crt"
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// ServiceDNSNames returns the names the API server uses to reach a Service.
func ServiceDNSNames(service, namespace string) []string {
	return []string{
		service,
		service + "." + namespace,
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc.cluster.local",
	}
}

// Generate issues a CA and a serving certificate signed by it.
func Generate(o Options) (*Bundle, error) {
	if len(o.DNSNames) == 0 && len(o.IPs) == 0 {
		return nil, errors.New("certgen: at least one DNS name or IP is required")
	}
	if o.Validity <= 0 {
		o.Validity = 365 * 24 * time.Hour
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	// Backdate a little so a skewed API server clock still accepts them.
	notBefore := now().Add(-5 * time.Minute)
	notAfter := notBefore.Add(o.Validity)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certgen: CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "graft-ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("certgen: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("certgen: parse CA: %w", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certgen: serving key: %w", err)
	}
	cn := "graft"
	if len(o.DNSNames) > 0 {
		cn = o.DNSNames[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     o.DNSNames,
		IPAddresses:  o.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("certgen: serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certgen: marshal key: %w", err)
	}
	return &Bundle{
		CACert:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		TLSCert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		TLSKey:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// Write stores the bundle as ca.crt, tls.crt and tls.key in dir (created
// 0700 if missing); the key is written 0600.
func (b *Bundle) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("certgen: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{CAFile, b.CACert, 0o644}, {CertFile, b.TLSCert, 0o644}, {KeyFile, b.TLSKey, 0o600}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return fmt.Errorf("certgen: %w", err)
		}
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(fmt.Sprintf("certgen: serial: %v", err))
	}
	return n
}
