package docscluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/e2e/internal/realcluster"
	"github.com/graftdev/graft/internal/docblocks"
)

// repoRoot is graft's repository, seen from this package's directory.
const repoRoot = "../.."

// copied are the repository's directories the blocks may read, as in
// cmd/graft's TestDocs: a reader has a checkout.
var copied = []string{"deploy", "docs", "templates"}

// upgradeTag is the version the docs' upgrade goes to: graft's image
// under another tag, which the docs write as vX.Y.Z.
const upgradeTag = "v0.1.0-upgrade"

// placeholders are what the docs write where a reader puts their own
// value, and what this test puts there.
var placeholders = map[string]string{"vX.Y.Z": upgradeTag}

// blockTimeout bounds one block: a rollout status or a wait in the docs
// must end, and a loaded 2-core machine starts Pods in seconds.
const blockTimeout = 5 * time.Minute

// TestDocsTourIsConsistent: the blocks the docs claim for
// TestDocsOnCluster are on its tour, the sections the tour names exist,
// and every block of the tour's pages runs or is left out for a reason
// that holds. It needs no cluster.
func TestDocsTourIsConsistent(t *testing.T) {
	steps, errs := plan(repoRoot)
	for _, err := range errs {
		t.Error(err)
	}
	for p := range placeholders {
		if !slices.ContainsFunc(steps, func(s step) bool { return strings.Contains(s.block.Text, p) }) {
			t.Errorf("no block of the tour writes the placeholder %s any more", p)
		}
	}
	cluster := 0
	for _, s := range steps {
		if name, ok := s.block.CheckedBy(); ok && name == testName {
			cluster++
		}
	}
	if cluster < 10 {
		t.Errorf("%d blocks of the tour are marked for %s, want at least 10: the markers or the tour are off", cluster, testName)
	}
}

// TestDocsOnCluster runs the tour: a cluster with a real node and no
// graft, then every block of the tour in order, as a reader would
// (install, opt in, canary, audit, rollout, upgrade, export, uninstall;
// the chart's install, upgrade, rollback and uninstall), each output the
// docs show compared with what its block printed. The
// first block that fails stops the tour: the ones after it build on it.
func TestDocsOnCluster(t *testing.T) {
	steps, errs := plan(repoRoot)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("the tour does not match the docs (TestDocsTourIsConsistent says how): %v", err)
	}
	c := startCluster(t)
	r := newReader(t, c)
	for _, s := range steps {
		out, err := r.run(t, s)
		t.Logf("%s (%s):\n%s\n%s", s.where(), s.block.Section, indent(s.block.Text, "$ "), indent(out, "  "))
		switch {
		case err != nil && !s.fails:
			t.Fatalf("%s: the block failed as written: %v\n%s", s.where(), err, out)
		case err == nil && s.fails:
			t.Fatalf("%s: marked to fail, the block succeeded:\n%s", s.where(), out)
		}
		if s.shown {
			if err := docblocks.MatchOutput(fill(s.want), out); err != nil {
				t.Fatalf("%s: the output the docs show is not what the block prints: %v", s.where(), err)
			}
		}
	}
}

// startCluster starts a control plane and a real node without graft, with
// graft's image and the images the docs' Pods name on the node; it skips
// t where this machine cannot run real nodes (fails under CI=true).
func startCluster(t *testing.T) *realcluster.Cluster {
	t.Helper()
	opts, err := realcluster.OptionsFromEnv(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := realcluster.Check(opts.Kubelet); err != nil {
		var u *realcluster.Unavailable
		if os.Getenv("CI") == "true" || !errors.As(err, &u) {
			t.Fatalf("%v (CI=true: `make e2e` installs the node tools with make node-tools)", err)
		}
		t.Skip(err)
	}
	opts.WithoutGraft = true
	if opts.Cluster.Dir, err = os.MkdirTemp(cluster.TempRoot(), "graft-e2e-docs-"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	c, err := realcluster.Start(ctx, opts)
	t.Cleanup(func() {
		if c != nil {
			if err := c.Stop(); err != nil {
				t.Errorf("teardown: %v", err)
			}
		}
		if t.Failed() {
			os.RemoveAll(filepath.Join(opts.Cluster.Dir, "etcd-data"))
			t.Logf("logs kept in %s", opts.Cluster.Dir)
			return
		}
		os.RemoveAll(opts.Cluster.Dir)
	})
	if err != nil {
		if c != nil {
			t.Log(c.Logs(8 << 10))
		}
		t.Fatalf("start: %v", err)
	}
	if err := importDocImages(ctx, c); err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane and %d real node(s) ready in %s, graft's image as %s, no graft installed (logs in %s)",
		len(c.Nodes), time.Since(start).Round(time.Millisecond), c.Graft.Image, opts.Cluster.Dir)
	return c
}

// importDocImages gives every node the images the docs' Pods name, as
// the harness's stand-ins (nothing can be pulled here), and graft's image
// under the tag of the docs' upgrade.
func importDocImages(ctx context.Context, c *realcluster.Cluster) error {
	defaults, err := realcluster.TemplateImages()
	if err != nil {
		return err
	}
	archives := map[string]string{
		// deploy/examples' app, and the docs' Pods.
		"registry.example/web:1.0.0": c.Images[realcluster.AppImage],
		// The Envoy deploy/examples/revisions keeps its current revision at.
		"docker.io/envoyproxy/envoy:v1.39.0": c.Images[defaults["mesh-proxy"]],
	}
	repo := c.Graft.Image[:strings.LastIndex(c.Graft.Image, ":")]
	archives[repo+":"+upgradeTag] = os.Getenv(realcluster.EnvGraftImage)
	for name, archive := range archives {
		if archive == "" {
			return fmt.Errorf("no image to stand in for %s", name)
		}
		for _, n := range c.Nodes {
			// ImportAs renames: the archive's own name is imported again.
			if err := n.ImportAs(ctx, archive, name); err != nil {
				return err
			}
			if err := n.Import(ctx, archive); err != nil {
				return err
			}
		}
	}
	return nil
}

// reader is a reader's terminal: a checkout's deploy/, docs/ and
// templates/ as the working directory, graft, kubectl and helm on the
// PATH, a kubeconfig for the cluster.
type reader struct {
	work, scripts string
	env           []string
	n             int
}

func newReader(t *testing.T, c *realcluster.Cluster) *reader {
	t.Helper()
	dir := t.TempDir()
	r := &reader{work: filepath.Join(dir, "work"), scripts: filepath.Join(dir, "blocks")}
	for _, d := range []string{r.work, r.scripts, filepath.Join(dir, "bin"), filepath.Join(dir, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range copied {
		if err := os.CopyFS(filepath.Join(r.work, d), os.DirFS(filepath.Join(repoRoot, d))); err != nil {
			t.Fatal(err)
		}
	}
	tools := map[string]string{
		"graft":     os.Getenv("GRAFT_E2E_GRAFT"),
		"kubectl":   os.Getenv("GRAFT_E2E_KUBECTL"),
		"helm":      os.Getenv("GRAFT_E2E_HELM"),
		"kustomize": os.Getenv("GRAFT_E2E_KUSTOMIZE"),
	}
	for name, path := range tools {
		if path == "" {
			t.Fatalf("no %s: `make e2e` builds it and says where (GRAFT_E2E_%s)", name, strings.ToUpper(name))
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, "bin", name)); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	r.env = []string{
		"PATH=" + filepath.Join(dir, "bin") + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + filepath.Join(dir, "home"),
		"KUBECONFIG=" + kubeconfig,
		"LANG=C.UTF-8",
	}
	return r
}

// run runs a block as its own bash script (-e, -o pipefail), stdout and
// stderr together as a terminal shows them.
func (r *reader) run(t *testing.T, s step) (string, error) {
	r.n++
	script := filepath.Join(r.scripts, fmt.Sprintf("%03d-%s-%d.sh", r.n, filepath.Base(s.file), s.block.Line))
	if err := os.WriteFile(script, []byte(fill(s.block.Text)), 0o644); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(t.Context(), blockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", script)
	cmd.Dir, cmd.Env = r.work, r.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// The block's commands go with it when it runs out of time.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w after %s", ctx.Err(), blockTimeout)
	}
	return out.String(), err
}

// fill puts this test's values in the placeholders of a block or of the
// output the docs show.
func fill(text string) string {
	for p, v := range placeholders {
		text = strings.ReplaceAll(text, p, v)
	}
	return text
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}
