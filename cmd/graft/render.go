package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	yaml "go.yaml.in/yaml/v3"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/manifest"
	"github.com/graftdev/graft/templates"
)

func newRenderCmd() *cobra.Command {
	var (
		sets         []string
		configFile   string
		templatesDir string
		output       string
	)
	cmd := &cobra.Command{
		Use:   "render TEMPLATE [--set param=value ...]",
		Short: "Print the Pod fragment a template renders to",
		Long: `render renders one template with its parameters' defaults, overridden by
--set, validates every value and the result as the engine does, and prints
the fragment graft would add to a Pod.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output, "yaml", "json"); err != nil {
				return err
			}
			overrides, err := parseSets(sets)
			if err != nil {
				return err
			}
			cfg, set, err := loadEngineConfig(configFile, templatesDir)
			if err != nil {
				return err
			}
			// A configuration graft serve would refuse is refused here too.
			if _, err := inject.New(cfg, set); err != nil {
				return err
			}
			out, err := renderTemplate(set, args[0], overrides, output)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "set a parameter: param=value (repeatable)")
	cmd.Flags().StringVar(&configFile, "config", "", "configuration file, as given to graft serve: its server.templatesDir is used")
	cmd.Flags().StringVar(&templatesDir, "templates-dir", "", "directory of templates overlaying the built-in ones (default: the config file's server.templatesDir)")
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

// parseSets turns --set param=value flags into overrides.
func parseSets(sets []string) (map[string]string, error) {
	overrides := make(map[string]string, len(sets))
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %s: want param=value", s)
		}
		if _, dup := overrides[k]; dup {
			return nil, fmt.Errorf("--set %s: %s is set twice", s, k)
		}
		overrides[k] = v
	}
	return overrides, nil
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
