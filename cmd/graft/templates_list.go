package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/offline"
)

// templateRow is one template in graft templates list.
type templateRow struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Parameters  []string `json:"parameters"`
	// Profiles inject it, or let a Pod ask for it (allowedTemplates).
	Profiles []string `json:"profiles"`
	File     string   `json:"file,omitempty"`
}

func newTemplatesListCmd() *cobra.Command {
	var configFile, templatesDir, output string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the templates graft serves, their parameters and the profiles that use them",
		Example: templatesListExample,
		Long: `list prints the templates graft serve would run with: the built-in ones,
overlaid by --templates-dir (default: the --config file's
server.templatesDir), each with its parameters, the profiles of the
configuration that inject it or let a Pod ask for it, and what it
injects. -o json gives the same as a list, for machines.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(output, "table", "json"); err != nil {
				return err
			}
			cfg, set, err := offline.LoadConfig(configFile, templatesDir)
			if err != nil {
				return err
			}
			var rows []templateRow
			for _, name := range set.Names() {
				t, _ := set.Get(name)
				r := templateRow{Name: name, Description: t.Description, Parameters: []string{}, Profiles: []string{}, File: t.File}
				for _, p := range t.Params {
					r.Parameters = append(r.Parameters, p.Name)
				}
				for _, pn := range slices.Sorted(maps.Keys(cfg.Profiles)) {
					p := cfg.Profiles[pn]
					if slices.Contains(p.Templates, name) || slices.Contains(p.AllowedTemplates, name) {
						r.Profiles = append(r.Profiles, pn)
					}
				}
				rows = append(rows, r)
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				return writeStructured(out, "json", rows)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tPARAMETERS\tPROFILES\tDESCRIPTION")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", r.Name, len(r.Parameters), orNone(strings.Join(r.Profiles, ",")), r.Description)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&configFile, names.FlagConfig, "", "configuration file, as given to graft serve: its profiles, and its server.templatesDir")
	cmd.Flags().StringVar(&templatesDir, names.FlagTemplatesDir, "", "directory of templates overlaying the built-in ones (default: the config file's server.templatesDir)")
	cmd.Flags().StringVarP(&output, names.FlagOutput, names.FlagOutputShort, "table", "output format: table or json")
	registerFormats(cmd, "table", "json")
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
