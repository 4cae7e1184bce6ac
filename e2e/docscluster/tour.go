// Package docscluster runs the docs' cluster commands as their reader
// would: in the order a reader follows the pages (install, opt a
// namespace in, a canary revision, audit, rollout, upgrade, export,
// uninstall; then the same cluster again with the Helm chart: install,
// upgrade, roll back, uninstall), each shell block as written, with
// graft, kubectl, kustomize and helm on the PATH, from a copy of the
// repository's deploy/, docs/ and templates/, on a cluster of its own
// (package realcluster, without graft: the docs install it), and every
// output the docs show compared with what the block printed.
//
// A block runs here when it is marked <!-- checked by TestDocsOnCluster
// --> (<!-- checked by TestDocsOnCluster: fails --> when it must exit
// non-zero), or is an unmarked (offline) block of a page of the tour: a
// reader runs those too, and a later block may read what they wrote. A
// block of the tour's pages may stay <!-- not run: REASON --> only for a
// reason from notRunReasons, and only where what the reason says holds
// of the block.
package docscluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/graftdev/graft/internal/docblocks"
)

// testName is the test whose marker claims a block for this package.
const testName = "TestDocsOnCluster"

// stop is a page of the tour, or some of its sections.
type stop struct {
	file string
	// only, when set, are the sections of the page this stop runs;
	// except are sections it leaves to another stop.
	only, except []string
}

// tour is the reader's path, in order: graft installed with kustomize,
// used and uninstalled, then installed again with the chart, upgraded,
// rolled back and uninstalled. Each uninstall comes after what uses it.
var tour = []stop{
	{file: "README.md", only: []string{"Install"}},
	{file: "docs/tasks/install.md", except: []string{"Install with Helm", "Installed with kustomize", "Installed with Helm", "Nothing left"}},
	{file: "docs/tasks/opt-in.md"},
	{file: "README.md", only: []string{"Opt a namespace in"}},
	{file: "docs/tasks/canary.md"},
	{file: "docs/tasks/audit.md"},
	{file: "docs/tasks/rollout.md"},
	{file: "docs/tasks/upgrade.md", except: []string{"With Helm"}},
	{file: "docs/tasks/export.md"},
	{file: "docs/tasks/install.md", only: []string{"Installed with kustomize", "Nothing left"}},
	// The chart, on the same cluster.
	{file: "docs/tasks/install.md", only: []string{"Install with Helm"}},
	{file: "docs/tasks/upgrade.md", only: []string{"With Helm"}},
	{file: "docs/tasks/install.md", only: []string{"Installed with Helm", "Nothing left"}},
}

// notRunReason is a reason a block of the tour's pages may give for not
// running, and what must hold of the block for the reason to be true.
type notRunReason struct {
	prefix string
	holds  func(text string) bool
	// what the block must show, for the message when it does not.
	what string
}

var notRunReasons = []notRunReason{
	{"needs cert-manager", needsCertManager, "cert-manager overlay, nor the chart with its default certificates"},
	{"needs a registry", mentionsAny("registry.example", "docker load", "ctr "), "push to a registry, nor a load into a node's runtime"},
	{"a make target", func(text string) bool { return everyCommand(text, "make ") }, "make command alone"},
	{"serves until stopped", mentionsAny("--serve", "graft serve", "port-forward"), "server that keeps running"},
	// The tour installs this release only.
	{"needs an install from before", mentionsAny("--cascade=orphan", "!app.kubernetes.io/instance"), "step of a migration from an older install"},
	// No kube-proxy: a Pod cannot reach the API server's Service.
	{"needs Pods that reach the API server", mentionsAny("components/watchdog", "components/audit", "watchdog.enabled", "audit.exporter"), "in-cluster client of the API server (the watchdog, the audit exporter)"},
}

// needsCertManager: the block applies an overlay built on cert-manager,
// or installs the chart with its default certificates (cert-manager's).
func needsCertManager(text string) bool {
	if mentionsAny("overlays/cert-manager", "overlays/ha")(text) {
		return true
	}
	return mentionsAny("helm install", "helm upgrade")(text) && !strings.Contains(text, "certificates.source")
}

func mentionsAny(words ...string) func(string) bool {
	return func(text string) bool {
		return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(text, w) })
	}
}

// everyCommand reports whether every command line of a block starts
// with prefix (comments and blank lines aside).
func everyCommand(text, prefix string) bool {
	n := 0
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, prefix) {
			return false
		}
		n++
	}
	return n > 0
}

// step is a block of the tour to run, with the output the docs show
// after it, if any.
type step struct {
	file  string
	block docblocks.Block
	fails bool   // marked to exit non-zero
	want  string // the <!-- output --> block after it
	shown bool   // whether there is one
}

func (s step) where() string { return s.block.Where(s.file) }

// plan reads the tour's pages under root and returns the blocks to run,
// in order, and every way the docs and the tour disagree: a block
// claimed for this test that the tour does not reach, a section the tour
// names that a page lacks, a block of the tour's pages left not run for
// a reason that is not one of notRunReasons or does not hold.
func plan(root string) ([]step, []error) {
	var (
		steps []step
		errs  []error
	)
	ran := map[string]bool{} // file:line of the blocks the tour runs
	pages := map[string][]docblocks.Block{}
	for _, s := range tour {
		blocks, ok := pages[s.file]
		if !ok {
			data, err := os.ReadFile(filepath.Join(root, s.file))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			blocks = docblocks.Parse(string(data))
			pages[s.file] = blocks
		}
		for _, name := range append(slices.Clone(s.only), s.except...) {
			if !slices.ContainsFunc(blocks, func(b docblocks.Block) bool { return b.Section == name }) {
				errs = append(errs, fmt.Errorf("%s: no blocks under a heading %q, which the tour names", s.file, name))
			}
		}
		for i, b := range blocks {
			if len(s.only) > 0 && !slices.Contains(s.only, b.Section) || slices.Contains(s.except, b.Section) {
				continue
			}
			if reason, ok := b.NotRun(); ok {
				if err := checkNotRun(reason, b.Text); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", b.Where(s.file), err))
				}
				continue
			}
			st, ok := runnable(s.file, b)
			if !ok {
				continue
			}
			if err := staysPut(st.block.Text); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", st.where(), err))
			}
			if i+1 < len(blocks) && blocks[i+1].Output() {
				st.want, st.shown = blocks[i+1].Text, true
			}
			steps = append(steps, st)
			ran[st.where()] = true
		}
	}
	files, err := docblocks.Files(root)
	if err != nil {
		return steps, append(errs, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, b := range docblocks.Parse(string(data)) {
			if name, ok := b.CheckedBy(); ok && name == testName && !ran[b.Where(f)] {
				errs = append(errs, fmt.Errorf("%s: marked %q, but no stop of the tour (e2e/docscluster) reaches it", b.Where(f), b.Marker))
			}
		}
	}
	return steps, errs
}

// runnable is the step a block makes, and whether it is run: a shell
// block without a marker, marked to run, or claimed for this test.
func runnable(file string, b docblocks.Block) (step, bool) {
	if !b.Shell() {
		return step{}, false
	}
	st := step{file: file, block: b}
	switch name, checked := b.CheckedBy(); {
	case checked:
		st.fails = strings.HasSuffix(b.Marker, ": fails")
		return st, name == testName
	case b.Marker == "", b.Marker == "run":
		return st, true
	case b.Marker == "run: fails":
		st.fails = true
		return st, true
	}
	return step{}, false
}

// staysPut says why a block would leave a reader's terminal elsewhere
// than it runs here: each block runs from the checkout's top, while a
// reader's cd lasts into the next block.
func staysPut(text string) error {
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "cd" || f[0] == "pushd" || f[0] == "popd") {
			return fmt.Errorf("%q changes the reader's directory for the blocks after it: use a subshell, (cd DIR && ...), or paths from the checkout", strings.TrimSpace(line))
		}
	}
	return nil
}

// checkNotRun says why reason cannot excuse a block of the tour.
func checkNotRun(reason, text string) error {
	for _, r := range notRunReasons {
		if !strings.HasPrefix(reason, r.prefix) {
			continue
		}
		if !r.holds(text) {
			return fmt.Errorf("not run because it %q, yet it has no %s: run it (mark it <!-- checked by %s -->)", r.prefix, r.what, testName)
		}
		return nil
	}
	var known []string
	for _, r := range notRunReasons {
		known = append(known, r.prefix)
	}
	return fmt.Errorf("not run: %q: on the tour's pages a block runs on the cluster (<!-- checked by %s -->) unless it %s", reason, testName, strings.Join(known, ", or "))
}
