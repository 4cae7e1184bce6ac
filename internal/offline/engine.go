// Package offline is the CLI's use of the engine on manifests and on
// objects read elsewhere: graft inject, explain, uninject and render run
// Pods through the very engine and configuration graft serve runs, the
// way the API server would send them, and say what happened. It reads
// and writes manifests through internal/manifest and reaches no cluster
// and no server.
package offline

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/suggest"
	"github.com/graftdev/graft/templates"
)

// engine is what the offline commands run Pods through: the
// configuration's revisions (inject.Revisions, as graft serve does), or
// one inject.Engine.
type engine interface {
	Admit(dst, body []byte, o inject.Options) ([]byte, inject.Result, error)
	Explain(body []byte, o inject.Options) (*inject.Explanation, error)
	DefaultProfile() string
	Profiles() []string
}

// LoadConfig returns the engine configuration and the template set
// graft runs with, read exactly as graft serve reads them (config.Load:
// the built-in configuration without a file), with the built-in templates
// overlaid by templatesDir, or else by the file's server.templatesDir.
func LoadConfig(configFile, templatesDir string) (inject.Config, *templates.Set, error) {
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

// NewEngine builds the engines the offline commands use, one per
// revision of the configuration, and checks that profile and revision
// (empty: the defaults) are configured.
func NewEngine(configFile, templatesDir, profile, revision string) (*inject.Revisions, error) {
	f, err := config.Load(configFile)
	if err != nil {
		return nil, err
	}
	return NewEngineFrom(f, templatesDir, config.Templates, profile, revision)
}

// NewEngineFrom is NewEngine for a configuration read elsewhere (from
// the cluster, by the live commands), whose template directories load
// reads.
func NewEngineFrom(f config.File, templatesDir string, load config.TemplatesLoader, profile, revision string) (*inject.Revisions, error) {
	if profile != "" {
		if err := CheckProfile(f.Config, profile); err != nil {
			return nil, err
		}
	}
	rc, err := f.RevisionsConfigWith(cmp.Or(templatesDir, f.Server.TemplatesDir), load)
	if err != nil {
		return nil, err
	}
	revs, err := inject.NewRevisions(rc)
	if err != nil {
		return nil, err
	}
	if revision != "" && !slices.Contains(revs.Names(), revision) {
		hint := suggest.Hint(revision, revs.Names(), "configured")
		if len(revs.Names()) == 1 {
			hint += " (a configuration file declares revisions and tags: --config FILE)"
		}
		return nil, fmt.Errorf("%w %q%s", inject.ErrUnknownRevision, revision, hint)
	}
	return revs, nil
}

// CheckProfile refuses a profile cfg does not configure, naming the
// nearest one, or those it does.
func CheckProfile(cfg inject.Config, profile string) error {
	if _, ok := cfg.Profiles[profile]; ok {
		return nil
	}
	return fmt.Errorf("%w %q%s", inject.ErrUnknownProfile, profile, suggest.Hint(profile, slices.Collect(maps.Keys(cfg.Profiles)), "configured"))
}
