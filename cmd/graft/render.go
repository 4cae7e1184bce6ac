package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/offline"
)

func newRenderCmd() *cobra.Command {
	var (
		sets         []string
		configFile   string
		templatesDir string
		output       string
	)
	cmd := &cobra.Command{
		Use:     "render TEMPLATE [--set param=value ...]",
		Short:   "Print the Pod fragment a template renders to",
		Example: renderExample,
		Long: `render renders one template with its parameters' defaults, overridden by
--set, validates every value and the result as the engine does, and prints
the fragment graft would add to a Pod.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTemplates,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output, "yaml", "json"); err != nil {
				return err
			}
			overrides, err := parseSets(sets)
			if err != nil {
				return err
			}
			out, err := offline.Render(configFile, templatesDir, args[0], overrides, output == "json")
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringArrayVar(&sets, names.FlagSet, nil, "set a parameter: param=value (repeatable)")
	cmd.Flags().StringVar(&configFile, names.FlagConfig, "", "configuration file, as given to graft serve: its server.templatesDir is used")
	cmd.Flags().StringVar(&templatesDir, names.FlagTemplatesDir, "", "directory of templates overlaying the built-in ones (default: the config file's server.templatesDir)")
	cmd.Flags().StringVarP(&output, names.FlagOutput, names.FlagOutputShort, "yaml", "output format: yaml or json")
	registerFormats(cmd, "yaml", "json")
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
