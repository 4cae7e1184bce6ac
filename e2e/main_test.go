// Package e2e runs graft exactly as a cluster does: the real graft binary
// behind a real kube-apiserver and etcd, all on loopback. Pods stay Pending
// (there is no scheduler): admission is what is tested.
//
// Run it with `make e2e`, which builds the binaries and tells the suite
// where they are.
package e2e

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
	dir, err := os.MkdirTemp(tmpRoot(), "graft-e2e-")
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
	} else {
		fmt.Printf("e2e: etcd, kube-apiserver %s and graft ready in %s (wiring: %v)\n",
			s.serverVersion, time.Since(start).Round(time.Millisecond), s.shipped.Sources)
		s.templatesDir = templatesDir
		env = s
		code = m.Run()
	}
	if s != nil && s.cluster != nil {
		if code != 0 {
			fmt.Fprintln(os.Stderr, "e2e: FAILED; process logs follow")
			fmt.Fprint(os.Stderr, s.cluster.Logs(64<<10))
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

// tmpRoot puts etcd's data on tmpfs when there is one: fsync there is free,
// and nothing here needs to survive the run.
func tmpRoot() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", "graft-e2e-probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return "/dev/shm"
		}
	}
	return os.TempDir()
}
