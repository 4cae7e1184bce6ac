package webhook

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
)

// reloadSettle lets a burst of file events (an editor's save, a ConfigMap
// update, a copy of several templates) settle into one reload.
const reloadSettle = 100 * time.Millisecond

// watchConfig rebuilds the state when the config file or the templates
// directory changes, until ctx is done. A valid result is swapped in
// atomically; an invalid one is logged with its reason and counted, and
// the current state keeps serving.
func (s *Server) watchConfig(ctx context.Context, w *fsnotify.Watcher) {
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
			s.log.Warn("config watch error", zap.Error(err))
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if s.relevantConfigEvent(ev.Name) {
				timer.Reset(reloadSettle)
			}
		case <-timer.C:
			s.reload()
		}
	}
}

func (s *Server) relevantConfigEvent(name string) bool {
	dir := s.state.Load().settings.TemplatesDir
	if dir != "" && filepath.Dir(name) == filepath.Clean(dir) {
		return true
	}
	if s.opts.ConfigPath == "" {
		return false
	}
	base := filepath.Base(name)
	return base == "..data" || base == filepath.Base(s.opts.ConfigPath)
}

// reload reads config and templates again and swaps in the new state.
func (s *Server) reload() {
	err := s.tryReload()
	if err != nil {
		s.metrics.reloadErr.Inc()
		s.log.Error("config reload rejected; the previous configuration keeps serving", zap.Error(err))
	} else {
		s.metrics.reloadOK.Inc()
	}
	if s.opts.OnReload != nil {
		s.opts.OnReload(err)
	}
}

func (s *Server) tryReload() error {
	// The templates directory is the one being watched: a new one in the
	// file applies at the next restart, like the other listener settings.
	dir := s.state.Load().settings.TemplatesDir
	l, err := load(s.opts.ConfigPath, func(st *Settings) {
		if s.opts.Override != nil {
			s.opts.Override(st)
		}
		st.TemplatesDir = dir
	})
	if err != nil {
		return err
	}
	st, err := l.build(s.metrics, s.opts.Clock)
	if err != nil {
		return err
	}
	// The new engine answers the sample review before it takes traffic:
	// that warms its caches and rejects a set that cannot serve.
	if err := warmUp(st.eng); err != nil {
		return err
	}
	old := s.state.Load()
	if restartOnly(old.settings) != restartOnly(st.settings) {
		s.log.Warn("server settings other than budget, timeoutMargin, maxInFlight and logLevel changed; they apply at the next restart")
		// Keep serving with the settings the listeners were built with,
		// taking only the hot ones from the new file.
		hot := st.settings
		st.settings = old.settings
		st.settings.Budget, st.settings.TimeoutMargin = hot.Budget, hot.TimeoutMargin
		st.settings.MaxInFlight, st.settings.LogLevel = hot.MaxInFlight, hot.LogLevel
	}
	if lvl, err := parseLevel(st.settings.LogLevel); err == nil && s.opts.Level != nil {
		s.opts.Level.SetLevel(lvl)
	}
	s.state.Store(st)
	if !s.warmed.Swap(true) {
		s.log.Info("warmed up; ready")
	}
	s.log.Info("configuration reloaded", zap.Strings("templates", l.set.Names()),
		zap.String("default_profile", st.eng.DefaultProfile()))
	return nil
}

// restartOnly blanks the settings that a reload applies, leaving those
// that need a restart (listeners, TLS, timeouts, the watched directory).
func restartOnly(s Settings) Settings {
	s.Budget, s.TimeoutMargin, s.MaxInFlight, s.LogLevel = Duration{}, Duration{}, 0, ""
	return s
}
