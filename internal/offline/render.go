package offline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	yaml "go.yaml.in/yaml/v3"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/manifest"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/suggest"
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

// checkSets checks every --set of t at once: each names a parameter of
// t (or is told the nearest one) and holds a value it accepts.
func checkSets(t *templates.Template, overrides map[string]string) error {
	params := make([]string, len(t.Params))
	for i, p := range t.Params {
		params[i] = p.Name
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		p, ok := t.Param(name)
		if !ok {
			errs = append(errs, fmt.Errorf("--%s %s: template %s has no parameter %q%s", names.FlagSet, name, t.Name, name, suggest.Hint(name, params, "its parameters")))
			continue
		}
		if _, err := p.Parse(overrides[name]); err != nil {
			errs = append(errs, fmt.Errorf("--%s %s=%q: %s", names.FlagSet, name, overrides[name], err))
		}
	}
	return manifest.JoinProblems(errs...)
}

func renderTemplate(set *templates.Set, name string, overrides map[string]string, format string) ([]byte, error) {
	t, ok := set.Get(name)
	if !ok {
		return nil, fmt.Errorf("unknown template %q%s", name, suggest.Hint(name, set.Names(), "available"))
	}
	if err := checkSets(t, overrides); err != nil {
		return nil, err
	}
	// Render validates the fragment as the engine does; RenderYAML gives
	// the text the user wrote the template to produce.
	if _, err := t.Render(overrides); err != nil {
		return nil, err
	}
	text, err := t.RenderYAML(overrides)
	if err != nil {
		return nil, err
	}
	if format == "yaml" {
		// A fragment's actions ({{ if }}...) can leave blank lines ahead
		// of the first key: noise at the top of what a user reads.
		return trimLeadingBlankLines(text), nil
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

// trimLeadingBlankLines drops the lines before the first one with text.
func trimLeadingBlankLines(text []byte) []byte {
	for {
		i := bytes.IndexByte(text, '\n')
		if i < 0 || len(bytes.TrimSpace(text[:i])) > 0 {
			return text
		}
		text = text[i+1:]
	}
}
