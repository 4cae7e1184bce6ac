package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
	"github.com/graftdev/graft/webhook"
)

// maxConfigBytes bounds what a configuration file may hold.
const maxConfigBytes = 1 << 20

// loadEngineConfig returns the engine configuration and the template set
// graft runs with, read exactly as graft serve reads them: the config file
// (webhook.ParseConfig: the engine's fields at the top level, the server's
// under server:, the built-in profiles when it names none), or
// inject.DefaultConfig() without one; and the built-in templates overlaid
// by templatesDir, or else by the file's server.templatesDir.
func loadEngineConfig(configFile, templatesDir string) (inject.Config, *templates.Set, error) {
	fc := webhook.FileConfig{Config: inject.DefaultConfig()}
	if configFile != "" {
		data, err := readFileLimited(configFile, maxConfigBytes)
		if err != nil {
			return inject.Config{}, nil, fmt.Errorf("config: %w", err)
		}
		if fc, err = webhook.ParseConfig(data); err != nil {
			return inject.Config{}, nil, fmt.Errorf("config %s: %w", configFile, err)
		}
	}
	if templatesDir == "" {
		templatesDir = fc.Server.TemplatesDir
	}
	set, err := loadTemplates(templatesDir)
	if err != nil {
		return inject.Config{}, nil, err
	}
	return fc.Config, set, nil
}

// loadTemplates returns the built-in templates, overlaid by dir's.
func loadTemplates(dir string) (*templates.Set, error) {
	set, err := templates.Builtin()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return set, nil
	}
	own, err := templates.LoadDir(dir)
	if err != nil {
		return nil, err
	}
	return set.With(own), nil
}

// newOfflineEngine builds the engine the offline subcommands use and checks
// that profile (empty: the default one) is configured.
func newOfflineEngine(configFile, templatesDir, profile string) (*inject.Engine, error) {
	cfg, set, err := loadEngineConfig(configFile, templatesDir)
	if err != nil {
		return nil, err
	}
	if profile != "" {
		if _, ok := cfg.Profiles[profile]; !ok {
			return nil, fmt.Errorf("%w %q (configured: %s)", inject.ErrUnknownProfile, profile, profileNames(cfg))
		}
	}
	e, err := inject.New(cfg, set)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// readFileLimited reads file ("-" is not special here), refusing files
// larger than limit rather than reading them whole.
func readFileLimited(file string, limit int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, plainPathError(err)
	}
	defer f.Close()
	return readLimited(f, file, limit)
}

var errTooLarge = errors.New("too large")

func readLimited(r io.Reader, name string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w (over %d bytes)", name, errTooLarge, limit)
	}
	return data, nil
}

func profileNames(cfg inject.Config) string {
	return strings.Join(slices.Sorted(maps.Keys(cfg.Profiles)), ", ")
}
