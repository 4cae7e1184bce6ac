package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"go.uber.org/zap"
)

// certReloader serves the certificate in certFile/keyFile and reloads it
// when either changes. Mounted Secrets change by an atomic symlink swap
// (..data), so it watches the directories, not the files. A pair that does
// not load (say the certificate is written and the key not yet) is logged
// and the previous certificate keeps serving; the next change retries.
type certReloader struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
	log               *zap.Logger
	metrics           *metrics
	onReload          func(error)
}

func newCertReloader(certFile, keyFile string, m *metrics, log *zap.Logger, onReload func(error)) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log, metrics: m, onReload: onReload}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *certReloader) load() error {
	pair, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return fmt.Errorf("serving certificate: %w", err)
		}
		pair.Leaf = leaf
	}
	r.cur.Store(&pair)
	r.metrics.certExpiry.Set(float64(leaf.NotAfter.Unix()))
	return nil
}

// getCertificate is tls.Config.GetCertificate: every new handshake gets the
// current pair; established connections keep theirs.
func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cur.Load(), nil
}

// reload loads the pair again after a change, keeping the current one
// when the new pair does not load.
func (r *certReloader) reload() {
	err := r.load()
	if err != nil {
		r.log.Warn("certificate reload failed; keeping the current one", zap.Error(err))
	} else {
		leaf := r.cur.Load().Leaf
		r.log.Info("serving certificate reloaded",
			zap.String("serial", leaf.SerialNumber.String()), zap.Time("not_after", leaf.NotAfter))
	}
	if r.onReload != nil {
		r.onReload(err)
	}
}

// relevant reports whether a change to name may change the pair: the files
// themselves or Kubernetes' ..data symlink.
func (r *certReloader) relevant(name string) bool {
	return isDataSwap(name) || filepath.Clean(name) == filepath.Clean(r.certFile) ||
		filepath.Clean(name) == filepath.Clean(r.keyFile)
}
