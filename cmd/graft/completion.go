package main

import (
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/internal/offline"
)

// Shell completion offers the names a configuration defines where a
// command takes one, read as the command would read them: with the
// --config and --templates-dir already on the command line.

// completeTemplates offers the template names for a command's first
// argument (graft render TEMPLATE).
func completeTemplates(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	_, set, err := offline.LoadConfig(flagString(cmd, "config"), flagString(cmd, "templates-dir"))
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return withPrefix(set.Names(), prefix), cobra.ShellCompDirectiveNoFileComp
}

// completeProfiles offers the profiles of the configuration.
func completeProfiles(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	cfg, _, err := offline.LoadConfig(flagString(cmd, "config"), flagString(cmd, "templates-dir"))
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return withPrefix(slices.Sorted(maps.Keys(cfg.Profiles)), prefix), cobra.ShellCompDirectiveNoFileComp
}

// completeRevisions offers the revisions and tags of the configuration.
func completeRevisions(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	revs, err := offline.NewEngine(flagString(cmd, "config"), flagString(cmd, "templates-dir"), "", "")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return withPrefix(revs.Names(), prefix), cobra.ShellCompDirectiveNoFileComp
}

// flagString is the value of a string flag of cmd, "" if it has none.
func flagString(cmd *cobra.Command, name string) string {
	v, _ := cmd.Flags().GetString(name)
	return v
}

// withPrefix keeps the names that start with prefix.
func withPrefix(names []string, prefix string) []string {
	return slices.DeleteFunc(names, func(n string) bool { return !strings.HasPrefix(n, prefix) })
}
