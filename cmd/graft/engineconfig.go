package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// maxConfigBytes bounds what a configuration file may hold.
const maxConfigBytes = 1 << 20

// loadEngineConfig returns the engine configuration and the template set
// graft runs with: inject.DefaultConfig() or the YAML file configFile, and
// the built-in templates overlaid by templatesDir (when not empty). serve and
// the offline subcommands share it so they run exactly the same engine.
func loadEngineConfig(configFile, templatesDir string) (inject.Config, *templates.Set, error) {
	cfg := inject.DefaultConfig()
	if configFile != "" {
		var err error
		if cfg, err = readConfigFile(configFile); err != nil {
			return inject.Config{}, nil, err
		}
	}
	set, err := loadTemplates(templatesDir)
	if err != nil {
		return inject.Config{}, nil, err
	}
	return cfg, set, nil
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

// readConfigFile parses the engine configuration: inject.Config's fields at
// the top level. A `server:` section belongs to `graft serve` and is
// skipped here; any other unknown field is an error, so typos surface.
func readConfigFile(file string) (inject.Config, error) {
	data, err := readFileLimited(file, maxConfigBytes)
	if err != nil {
		return inject.Config{}, fmt.Errorf("config: %w", err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return inject.Config{}, fmt.Errorf("config %s: %w", file, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil || top == nil {
		return inject.Config{}, fmt.Errorf("config %s: not a mapping of settings", file)
	}
	delete(top, "server")
	js, err = json.Marshal(top)
	if err != nil {
		return inject.Config{}, fmt.Errorf("config %s: %w", file, err)
	}
	var cfg inject.Config
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return inject.Config{}, fmt.Errorf("config %s: %w", file, err)
	}
	return cfg, nil
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
