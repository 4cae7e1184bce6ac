// Package realnode runs graft's Pods for real: on real nodes (kubelet,
// containerd, runc, CNI bridge) beside a control plane on loopback, with
// graft itself installed from deploy/base's self-signed overlay and
// running its own image (`make images`), and every Pod it injects running
// the built-in templates as shipped, on stand-in images where the real
// program cannot run here (package standin says which).
//
// The tests skip, saying why, where this machine cannot run containers
// (not root, no overlayfs, the node tools not installed); under CI=true
// that is a failure, since `make e2e` installs the tools (make
// node-tools).
package realnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/e2e/internal/realcluster"
)

// repoRoot is graft's repository, seen from this package's directory.
const repoRoot = "../.."

var (
	// rig is the cluster every test shares; nil when unavailable says
	// why.
	rig         *realcluster.Cluster
	unavailable error
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	opts, err := realcluster.OptionsFromEnv(repoRoot)
	if err != nil {
		fmt.Fprintln(os.Stderr, "realnode:", err)
		return 1
	}
	if _, err := realcluster.Check(opts.Kubelet); err != nil {
		unavailable = err
		fmt.Fprintln(os.Stderr, "realnode:", err)
		return m.Run()
	}
	if opts.Cluster.Dir, err = os.MkdirTemp(cluster.TempRoot(), "graft-e2e-real-"); err != nil {
		fmt.Fprintln(os.Stderr, "realnode:", err)
		return 1
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	rig, err = realcluster.Start(ctx, opts)
	cancel()
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "realnode: start:", err)
		if rig != nil {
			fmt.Fprint(os.Stderr, rig.Logs(8<<10))
		}
	} else {
		fmt.Printf("realnode: control plane, %d real node(s), images and graft (%s, from deploy/%s) ready in %s (logs in %s)\n",
			len(rig.Nodes), rig.Graft.Image, realcluster.Overlay, time.Since(start).Round(time.Millisecond), opts.Cluster.Dir)
		code = m.Run()
	}
	if rig != nil {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "realnode: FAILED; the processes' logs: %s\n", strings.Join(rig.LogFiles(), " "))
		}
		if err := rig.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "realnode: teardown:", err)
			code = 1
		}
	}
	if code == 0 {
		os.RemoveAll(opts.Cluster.Dir)
	} else {
		os.RemoveAll(filepath.Join(opts.Cluster.Dir, "etcd-data"))
		fmt.Fprintln(os.Stderr, "realnode: logs kept in", opts.Cluster.Dir)
	}
	return code
}

// need returns the shared cluster, or skips the test saying why there is
// none; under CI=true a machine without what the project installs fails
// the test instead.
func need(t *testing.T) *realcluster.Cluster {
	t.Helper()
	if unavailable != nil {
		var u *realcluster.Unavailable
		if os.Getenv("CI") == "true" || !errors.As(unavailable, &u) {
			t.Fatalf("%v (CI=true: `make e2e` installs the node tools with make node-tools)", unavailable)
		}
		t.Skip(unavailable)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the processes' logs: %s", strings.Join(rig.LogFiles(), " "))
		}
	})
	return rig
}
