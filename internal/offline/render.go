package offline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/manifest"
	"github.com/graftdev/graft/templates"
)

// Render renders template name with its parameters' defaults, overridden
// by overrides, with the configuration and templates graft serve would
// run (a configuration graft serve would refuse is refused here too). It
// validates every value and the result as the engine does and returns
// the fragment graft would add to a Pod: the template's YAML, or with
// jsonOut, indented JSON.
func Render(configFile, templatesDir, name string, overrides map[string]string, jsonOut bool) ([]byte, error) {
	cfg, set, err := LoadConfig(configFile, templatesDir)
	if err != nil {
		return nil, err
	}
	if _, err := inject.New(cfg, set); err != nil {
		return nil, err
	}
	format := "yaml"
	if jsonOut {
		format = "json"
	}
	return renderTemplate(set, name, overrides, format)
}

func renderTemplate(set *templates.Set, name string, overrides map[string]string, format string) ([]byte, error) {
	t, ok := set.Get(name)
	if !ok {
		return nil, fmt.Errorf("unknown template %q (available: %s)", name, strings.Join(set.Names(), ", "))
	}
	// Render validates values and the fragment as the engine does;
	// RenderYAML gives the text the user wrote the template to produce.
	if _, err := t.Render(overrides); err != nil {
		var pe *templates.ParamError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("--set %s=%q: %s", pe.Param, pe.Value, pe.Rule)
		}
		return nil, err
	}
	text, err := t.RenderYAML(overrides)
	if err != nil {
		return nil, err
	}
	if format == "yaml" {
		return text, nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal(text, &n); err != nil {
		return nil, fmt.Errorf("template %s: rendered fragment: %w", name, err)
	}
	js, err := manifest.NodeJSON(&n)
	if err != nil {
		return nil, fmt.Errorf("template %s: rendered fragment: %w", name, err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, js, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}
