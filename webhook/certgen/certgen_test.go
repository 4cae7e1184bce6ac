package certgen

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
	"time"
)

func TestGenerateVerifiesForEachSAN(t *testing.T) {
	names := ServiceDNSNames("graft", "graft-system")
	b, err := Generate(Options{DNSNames: names, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Validity: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b.CACert) {
		t.Fatal("CA PEM not parsable")
	}
	block, _ := pem.Decode(b.TLSCert)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range append(names, "127.0.0.1") {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: n, Roots: pool}); err != nil {
			t.Errorf("verify %s: %v", n, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: pool}); err == nil {
		t.Error("certificate verified for a name it does not carry")
	}
	if got := leaf.NotAfter.Sub(leaf.NotBefore); got != 48*time.Hour {
		t.Errorf("validity = %v, want 48h", got)
	}
	if _, err := tls.X509KeyPair(b.TLSCert, b.TLSKey); err != nil {
		t.Errorf("key pair: %v", err)
	}
}

func TestGenerateNeedsASAN(t *testing.T) {
	if _, err := Generate(Options{}); err == nil {
		t.Fatal("want an error without SANs")
	}
}
