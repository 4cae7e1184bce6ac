package webhook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
)

// watchSettle lets a burst of file events (an editor's save, a Secret or
// ConfigMap update swapping ..data, a certificate and its key written one
// after the other) settle into one reload.
const watchSettle = 100 * time.Millisecond

// watchFiles calls reload once each burst of events that relevant accepts
// has been quiet for watchSettle, until ctx is done or the watcher closes.
// It is the one watch loop of the server: certificates and configuration
// are both reloaded through it. what names the files in logs.
func watchFiles(ctx context.Context, w *fsnotify.Watcher, what string, relevant func(name string) bool, reload func(), log *zap.Logger) {
	timer := time.NewTimer(0)
	if !timer.Stop() {
		<-timer.C
	}
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			log.Warn(what+" watch error", zap.Error(err))
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if relevant(ev.Name) {
				timer.Reset(watchSettle)
			}
		case <-timer.C:
			reload()
		}
	}
}

// newDirWatcher watches the directories holding files (a directory given
// itself is watched). Kubernetes updates mounted Secrets and ConfigMaps by
// swapping a ..data symlink in the directory, never the files in place.
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

// isDataSwap reports Kubernetes' atomic update of a mounted volume.
func isDataSwap(name string) bool { return filepath.Base(name) == "..data" }
