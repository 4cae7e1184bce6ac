// Command graft is the sidecar-injecting admission webhook and its offline
// tools. Each subcommand lives in its own file.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes graft with args and returns the process exit code. It is the
// seam the CLI tests drive.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(stderr, "graft:", err)
		var code *exitError
		if errors.As(err, &code) {
			return code.code
		}
		return 1
	}
	return 0
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "graft",
		Short:         "graft injects sidecars into Pods from templates",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newServeCmd(),
		newInjectCmd(),
		newExplainCmd(),
		newUninjectCmd(),
		newAuditCmd(),
		newRenderCmd(),
		newTemplatesCmd(),
		newCertsCmd(),
		newExportCmd(),
		newWebhooksCmd(),
		newGuaranteeCmd(),
		newVersionCmd(),
	)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print graft's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "graft", version)
			return err
		},
	}
}
