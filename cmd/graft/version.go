package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/internal/buildinfo"
)

// buildInfo is which graft this is.
func buildInfo() buildinfo.Info {
	return buildinfo.Read(buildinfo.Stamped{Version: version, Revision: revision, Time: buildTime})
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print graft's version, commit and Go version",
		Long: `version prints graft's version, the commit it was built from and when that
was committed, and the Go toolchain. A release build stamps them; any other
build (go install, go build in a checkout) reports what the Go toolchain
recorded. graft --version prints the same.`,
		Example: versionExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), buildInfo())
			return err
		},
	}
}
