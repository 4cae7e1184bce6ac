package webhook

import (
	"errors"
	"fmt"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/templates"
)

// relevantConfigEvent reports whether a change to name may change the
// configuration: the config file, a file of the templates directory, or a
// mounted ConfigMap's ..data swap.
func (s *Server) relevantConfigEvent(name string) bool {
	dir := s.state.Load().settings.TemplatesDir
	if dir != "" && filepath.Dir(name) == filepath.Clean(dir) {
		return true
	}
	if s.opts.ConfigPath == "" {
		return false
	}
	return isDataSwap(name) || filepath.Base(name) == filepath.Base(s.opts.ConfigPath)
}

// reload reads config and templates again and swaps in the new state. A
// valid result is swapped in atomically; an invalid one is logged with its
// reason and counted, and the current state keeps serving. A template set
// that lint refuses is refused here too; its problems are logged one by one
// as `graft templates lint` prints them.
func (s *Server) reload() {
	err := s.tryReload()
	if err != nil {
		s.metrics.reloadErr.Inc()
		fields := []zap.Field{zap.Error(err)}
		if se, ok := errors.AsType[*templates.SetError](err); ok {
			fields = append(fields, zap.Strings("problems", se.Lines()))
		}
		s.log.Error("config reload rejected; the previous configuration keeps serving", fields...)
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
	l, err := load(s.opts.ConfigPath, func(st *config.Server) {
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
	// Every new engine answers the sample review before it takes
	// traffic: that warms its caches and rejects a set that cannot serve.
	for _, rev := range st.revs.Revisions() {
		if err := warmUp(st.revs.Engine(rev)); err != nil {
			return fmt.Errorf("revision %s: %w", rev, err)
		}
	}
	// Keep serving with the settings the listeners were built with, taking
	// only the hot ones from the new file.
	hot := st.settings.Hot(s.state.Load().settings)
	if hot != st.settings {
		s.log.Warn("server settings other than budget, timeoutMargin, maxInFlight and logLevel changed; they apply at the next restart")
		st.settings = hot
	}
	if lvl, err := parseLevel(st.settings.LogLevel); err == nil && s.opts.Level != nil {
		s.opts.Level.SetLevel(lvl)
	}
	s.state.Store(st)
	if !s.warmed.Swap(true) {
		s.log.Info("warmed up; ready")
	}
	s.log.Info("configuration reloaded", zap.Strings("templates", l.set.Names()),
		zap.String("default_profile", st.eng.DefaultProfile()),
		zap.Strings("revisions", st.revs.Revisions()), zap.Strings("tags", st.revs.Tags()),
		zap.String("default_revision", st.revs.Default()))
	return nil
}
