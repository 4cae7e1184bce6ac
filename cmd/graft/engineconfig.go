package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// loadEngineConfig returns the engine configuration and the template set
// graft runs with, read exactly as graft serve reads them (config.Load:
// the built-in configuration without a file), with the built-in templates
// overlaid by templatesDir, or else by the file's server.templatesDir.
func loadEngineConfig(configFile, templatesDir string) (inject.Config, *templates.Set, error) {
	f, err := config.Load(configFile)
	if err != nil {
		return inject.Config{}, nil, err
	}
	if templatesDir == "" {
		templatesDir = f.Server.TemplatesDir
	}
	set, err := config.Templates(templatesDir)
	if err != nil {
		return inject.Config{}, nil, err
	}
	return f.Config, set, nil
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
	return inject.New(cfg, set)
}

func profileNames(cfg inject.Config) string {
	return strings.Join(slices.Sorted(maps.Keys(cfg.Profiles)), ", ")
}
