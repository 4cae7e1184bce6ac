// Package acceptance creates the acceptance corpus of issue 21 through a
// kube-apiserver with its default admission plugins and graft installed
// as deploy/base ships it (its configuration, webhooks and guarantee
// policies): each corpus Pod in a namespace of each built-in profile at
// each Pod Security level (enforce label), with and without a LimitRange
// as the Pod asks. Every create must end injected, skipped with a reason,
// or refused by graft with its message; the test fails on any refusal by
// the API server's validation or Pod Security for something graft added
// (the same Pod admitted in a same-level namespace graft does not serve),
// and on any refusal by graft's own guarantee.
//
// Creates are server-side dry runs: the whole admission chain runs, graft
// included, and nothing is stored.
//
// make e2e runs a seeded sample (GRAFT_ACCEPTANCE_PODS, default 150: five
// Pods per trait); make acceptance the whole corpus (2,010 Pods).
package acceptance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/graftdev/graft/e2e/internal/cluster"
)

// repoRoot is graft's repository, seen from this package's directory.
const repoRoot = "../.."

// env is the control plane every test shares.
var env *cluster.Cluster

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	opts, err := cluster.OptionsFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "acceptance:", err)
		return 1
	}
	if opts.Dir, err = os.MkdirTemp(cluster.TempRoot(), "graft-acceptance-"); err != nil {
		fmt.Fprintln(os.Stderr, "acceptance:", err)
		return 1
	}
	// graft with the configuration deploy/base ships.
	if opts.GraftConfig, err = os.ReadFile(filepath.Join(repoRoot, "deploy", "base", "config.yaml")); err != nil {
		fmt.Fprintln(os.Stderr, "acceptance:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	c, err := cluster.Start(ctx, opts)
	cancel()
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "acceptance: start:", err)
	} else {
		env = c
		code = m.Run()
	}
	if c != nil {
		if code != 0 {
			fmt.Fprint(os.Stderr, c.Logs(32<<10))
		}
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "acceptance: teardown:", err)
			code = 1
		}
	}
	if code == 0 {
		os.RemoveAll(opts.Dir)
	} else {
		os.RemoveAll(filepath.Join(opts.Dir, "etcd-data"))
		fmt.Fprintln(os.Stderr, "acceptance: logs kept in", opts.Dir)
	}
	return code
}
