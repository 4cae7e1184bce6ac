package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/graftdev/graft/internal/bounded"
)

// Mounted Secrets change by an atomic symlink swap (..data), so the TLS
// files are watched through their directories (watch.go). A file that does
// not load (say the certificate is written and the key not yet) is logged
// and counted, the previous value keeps serving, and the next change
// retries. New handshakes get what is current; established connections
// keep what they were made with.

// maxPEMBytes bounds a certificate or key file; real ones are a few KiB.
const maxPEMBytes = 1 << 20

// tlsReporter logs, counts (graft_tls_reloads_total) and reports each
// reload of TLS files.
type tlsReporter struct {
	log     *zap.Logger
	metrics *metrics
	hook    func(error) // Options.OnCertReload
}

func (r tlsReporter) report(what string, err error, fields ...zap.Field) {
	if err != nil {
		r.metrics.tlsReloadErr.Inc()
		r.log.Warn(what+" reload failed; keeping the current one", zap.Error(err))
	} else {
		r.metrics.tlsReloadOK.Inc()
		r.log.Info(what+" reloaded", fields...)
	}
	if r.hook != nil {
		r.hook(err)
	}
}

// certReloader serves the certificate in certFile/keyFile.
type certReloader struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
	rep               tlsReporter
}

func newCertReloader(certFile, keyFile string, rep tlsReporter) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, rep: rep}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

// load reads the pair. Its errors name the file at fault: crypto/tls's
// own ("failed to find any PEM data in certificate input") name none.
func (r *certReloader) load() error {
	certPEM, err := bounded.ReadFile(r.certFile, maxPEMBytes)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	keyPEM, err := bounded.ReadFile(r.keyFile, maxPEMBytes)
	if err != nil {
		return fmt.Errorf("serving key: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("serving certificate %s with key %s: %w", r.certFile, r.keyFile, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return fmt.Errorf("serving certificate %s: %w", r.certFile, err)
		}
		pair.Leaf = leaf
	}
	r.cur.Store(&pair)
	r.rep.metrics.certExpiry.Set(float64(leaf.NotAfter.Unix()))
	return nil
}

// getCertificate is tls.Config.GetCertificate: every new handshake gets the
// current pair.
func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cur.Load(), nil
}

// reload loads the pair again after a change.
func (r *certReloader) reload() {
	if err := r.load(); err != nil {
		r.rep.report("certificate", err)
		return
	}
	leaf := r.cur.Load().Leaf
	r.rep.report("certificate", nil,
		zap.String("serial", leaf.SerialNumber.String()), zap.Time("not_after", leaf.NotAfter))
}

// relevant reports whether a change to name may change the pair: the files
// themselves or Kubernetes' ..data symlink.
func (r *certReloader) relevant(name string) bool {
	return isDataSwap(name) || sameFile(name, r.certFile) || sameFile(name, r.keyFile)
}

// clientCAs requires client certificates signed by the CAs in file
// (--client-ca). Each handshake gets, through GetConfigForClient, the
// server's configuration with the pool last loaded.
type clientCAs struct {
	file string
	base *tls.Config
	cur  atomic.Pointer[tls.Config]
	rep  tlsReporter
}

// newClientCAs loads file; base is the server's configuration, which it
// copies for each pool.
func newClientCAs(file string, base *tls.Config, rep tlsReporter) (*clientCAs, error) {
	c := &clientCAs{file: file, base: base.Clone(), rep: rep}
	if err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *clientCAs) load() error {
	pem, err := bounded.ReadFile(c.file, maxPEMBytes)
	if err != nil {
		return fmt.Errorf("client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("client CA %s: no PEM certificates", c.file)
	}
	cfg := c.base.Clone()
	cfg.ClientCAs = pool
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	c.cur.Store(cfg)
	return nil
}

// getConfigForClient is tls.Config.GetConfigForClient.
func (c *clientCAs) getConfigForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	return c.cur.Load(), nil
}

func (c *clientCAs) reload() { c.rep.report("client CA", c.load()) }

func (c *clientCAs) relevant(name string) bool { return isDataSwap(name) || sameFile(name, c.file) }

func sameFile(a, b string) bool { return filepath.Clean(a) == filepath.Clean(b) }
