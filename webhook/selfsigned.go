package webhook

import (
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/webhook/certgen"
)

// selfSigned issues a CA and a serving certificate for local use and the
// in-cluster service names, writes them to a new temporary directory, and
// logs where, with the CA bundle a webhook configuration needs.
func selfSigned(log *zap.Logger) (dir string, err error) {
	dnsNames := append([]string{"localhost"}, certgen.ServiceDNSNames(names.ServiceName, names.SystemNamespace)...)
	b, err := certgen.Generate(certgen.Options{
		DNSNames: dnsNames,
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	})
	if err != nil {
		return "", fmt.Errorf("self-signed certificate: %w", err)
	}
	// The temporary directory is $TMPDIR, or /tmp.
	dir, err = os.MkdirTemp("", "graft-certs-")
	if err != nil {
		return "", fmt.Errorf("self-signed certificate: no directory for it in %s: %w", os.TempDir(), err)
	}
	if err := b.Write(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("self-signed certificate: writing it to %s: %w", dir, err)
	}
	log.Info("no --"+names.FlagTLSCert+"/--"+names.FlagTLSKey+": serving a self-signed certificate",
		zap.String("dir", dir),
		zap.String("ca_file", filepath.Join(dir, certgen.CAFile)),
		zap.String("ca_bundle", base64.StdEncoding.EncodeToString(b.CACert)))
	return dir, nil
}
