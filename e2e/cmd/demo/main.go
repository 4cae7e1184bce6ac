// Command demo runs graft's demo (package demo): a cluster on loopback,
// a Deployment rolled out with graft's sidecar, torn down. Run it with
// `make demo`, which builds the binaries and says where they are.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/e2e/internal/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts, err := cluster.OptionsFromEnv()
	if err == nil {
		// make demo runs from e2e/, one level below the repository.
		err = demo.Run(ctx, os.Stdout, opts, "..")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
