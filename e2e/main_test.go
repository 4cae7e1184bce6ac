// Package e2e runs graft exactly as a cluster does: the real graft binary
// behind a real control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler) with kwok's simulated nodes, all on loopback: Pods are
// scheduled and go Running and Ready, and Deployments, StatefulSets, Jobs
// and the rest are run by their controllers.
//
// Run it with `make e2e`, which builds the binaries and tells the suite
// where they are.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/e2e/internal/cluster"
)

// repoRoot is graft's repository, seen from this package's directory.
const repoRoot = ".."

// env is the one control plane every test shares. TestMain sets it before
// any test runs and nothing writes it afterwards.
var env *suite

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	opts, err := cluster.OptionsFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if opts.Nodes == 0 && !opts.APIOnly {
		fmt.Fprintln(os.Stderr, "e2e: the suite runs workloads, which need nodes: GRAFT_E2E_NODES must be 1 or more")
		return 1
	}
	dir, err := os.MkdirTemp(cluster.TempRoot(), "graft-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	opts.Dir = dir
	templatesDir, err := writeSuiteTemplates(dir)
	if err == nil {
		opts.GraftConfig, err = graftConfig(templatesDir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	s, err := startSuite(ctx, opts)
	cancel()
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start:", err)
		if s != nil && s.cluster != nil {
			fmt.Fprint(os.Stderr, s.cluster.Logs(8<<10))
		}
	} else {
		if opts.APIOnly {
			fmt.Printf("e2e: etcd, kube-apiserver %s and graft ready in %s, no controllers and no nodes (API-level run; wiring: %v; logs in %s)\n",
				s.serverVersion, time.Since(start).Round(time.Millisecond), s.shipped.Sources, dir)
		} else {
			fmt.Printf("e2e: etcd, kube-apiserver %s, kube-controller-manager, kube-scheduler, kwok (%d nodes) and graft ready in %s (wiring: %v; logs in %s)\n",
				s.serverVersion, opts.Nodes, time.Since(start).Round(time.Millisecond), s.shipped.Sources, dir)
		}
		s.templatesDir = templatesDir
		env = s
		code = m.Run()
	}
	if s != nil && s.cluster != nil {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "e2e: FAILED; the processes' logs: %s\n", strings.Join(s.cluster.LogFiles(), " "))
		}
		if err := s.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: teardown:", err)
			code = 1
		}
	}
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		// Keep the logs and certificates, not etcd's preallocated data
		// (tens of MB, on tmpfs when /dev/shm is used).
		os.RemoveAll(filepath.Join(dir, "etcd-data"))
		fmt.Fprintln(os.Stderr, "e2e: full logs kept in", dir)
	}
	return code
}
