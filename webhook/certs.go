package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/fsnotify/fsnotify"
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

// watch reloads on changes until ctx is done.
func (r *certReloader) watch(ctx context.Context, w *fsnotify.Watcher) {
	for {
		select {
		case <-ctx.Done():
			return
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			r.log.Warn("certificate watch error", zap.Error(err))
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if !r.relevant(ev.Name) {
				continue
			}
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
	}
}

// relevant reports whether a change to name may change the pair: the files
// themselves or Kubernetes' ..data symlink.
func (r *certReloader) relevant(name string) bool {
	base := filepath.Base(name)
	return base == "..data" || filepath.Clean(name) == filepath.Clean(r.certFile) ||
		filepath.Clean(name) == filepath.Clean(r.keyFile)
}

// newDirWatcher watches the directories holding files.
func newDirWatcher(files ...string) (*fsnotify.Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		dir := filepath.Dir(f)
		if fi, err := os.Stat(f); err == nil && fi.IsDir() {
			dir = f
		}
		if seen[dir] {
			continue
		}
		seen[dir] = true
		if err := w.Add(dir); err != nil {
			w.Close()
			return nil, fmt.Errorf("watch %s: %w", dir, err)
		}
	}
	return w, nil
}
