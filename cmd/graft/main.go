// Command graft is the sidecar-injecting admission webhook and its offline
// tools. Each subcommand lives in its own file, with its flags; flags.go
// holds those several share. The work is done by the packages they wire
// up: webhook (serve), internal/offline and internal/manifest (inject,
// explain, uninject, render), internal/live (audit, explain KIND/NAME),
// export, internal/registration (webhooks), webhook/certgen (certs) and
// internal/redirect (proxy-init, and the CNI plugin the binary is when
// installed as graft-cni).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/redirect/cni"
)

// Release builds stamp these with -ldflags "-X main.version=..." (and
// main.revision, main.buildTime); unset, the toolchain's record of the
// build is used instead (see internal/buildinfo).
var version, revision, buildTime string

func main() {
	// Installed in a node's CNI bin directory under the plugin's name, the
	// binary is graft's CNI plugin: the runtime runs it with no arguments,
	// the command in CNI_COMMAND and the configuration on stdin.
	if filepath.Base(os.Args[0]) == cni.PluginType {
		cni.Main()
		return
	}
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
		// An error may list several problems, one a line: each gets the
		// prefix, so every line says who is talking.
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(stderr, "graft:", line)
		}
		var code *exitError
		if errors.As(err, &code) {
			return code.code
		}
		return 1
	}
	return 0
}

// exitError carries an exit code other than 1 to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "graft",
		Short:         "graft injects sidecars into Pods from templates",
		Example:       rootExample,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildInfo().Version,
	}
	root.SetVersionTemplate(buildInfo().String())
	// --version without cobra's -v: kubectl's -v is its verbosity, and a
	// user's habit must not print a version instead.
	root.Flags().Bool(names.FlagVersion, false, "print graft's version (as graft version does)")
	root.AddCommand(
		newServeCmd(),
		newInjectCmd(),
		newExplainCmd(),
		newUninjectCmd(),
		newAuditCmd(),
		newRolloutCmd(),
		newWatchdogCmd(),
		newRenderCmd(),
		newTemplatesCmd(),
		newCertsCmd(),
		newExportCmd(),
		newWebhooksCmd(),
		newGuaranteeCmd(),
		newProbeCmd(),
		newProxyInitCmd(),
		newVersionCmd(),
	)
	return root
}
