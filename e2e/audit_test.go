package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
)

// auditOldImage is the agent image of the configuration the stale Pods
// were injected with (offline, by graft inject); graft serves the
// template's default.
const auditOldImage = "registry.invalid/agent:0.9.0"

// truth is what a test knows of one Pod it created.
type truth struct{ class, cause string }

// auditPod is one Pod of `graft audit -o json`.
type auditPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Class     string `json:"class"`
	Cause     string `json:"cause"`
	Revision  string `json:"revision"`
	Detail    string `json:"detail"`
	Workload  struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"workload"`
}

type auditReport struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Pods       []auditPod `json:"pods"`
	Workloads  []struct {
		Namespace string         `json:"namespace"`
		Kind      string         `json:"kind"`
		Name      string         `json:"name"`
		Pods      int            `json:"pods"`
		Class     string         `json:"class"`
		Classes   map[string]int `json:"classes"`
	} `json:"workloads"`
}

// TestAudit creates a known mix of Pods through the real API server (and
// graft, down, offline, or not selected) and holds `graft audit` to it:
// every Pod's class and cause agree, and the table, Prometheus and
// --fail-on outputs say the same.
func TestAudit(t *testing.T) {
	needsWorkloads(t)
	want := map[string]truth{} // namespace/name
	var mu sync.Mutex
	expect := func(ns string, pods []*corev1.Pod, tr truth) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range pods {
			want[ns+"/"+p.Name] = tr
		}
	}
	batch := func(prefix string, n int, mutate ...func(*corev1.Pod)) []*corev1.Pod {
		out := make([]*corev1.Pod, n)
		for i := range out {
			out[i] = simplePod(fmt.Sprintf("%s-%03d", prefix, i))
			for _, m := range mutate {
				m(out[i])
			}
		}
		return out
	}
	enabled := map[string]string{names.Inject: "enabled"}

	// current: a Deployment's Pods, made by its ReplicaSet through graft.
	nsCurrent := newNamespace(t, "audit-current", enabled)
	if err := env.waitInjecting(t.Context(), nsCurrent); err != nil {
		t.Fatal(err)
	}
	createDeployments(t, nsCurrent, newDeployment("web", 100))
	waitRolledOut(t, nsCurrent)
	current := deploymentPods(t, nsCurrent, "web", 100)
	expect(nsCurrent, current, truth{"current", ""})
	optedOut := batch("opted-out", 30, func(p *corev1.Pod) { p.Labels = map[string]string{names.Inject: "false"} })
	createPods(t, nsCurrent, optedOut, false)
	expect(nsCurrent, optedOut, truth{"opted-out", ""})

	// stale: injected offline with an older configuration, created while
	// the namespace selected no webhook, then opted in.
	nsStale := newNamespace(t, "audit-stale", nil)
	stale := injectOffline(t, nsStale, oldAgentConfig(t), batch("stale", 60))
	createPods(t, nsStale, stale, true)
	expect(nsStale, stale, truth{"stale", "revision-changed"})
	labelNamespace(t, nsStale, enabled)

	// missing: the namespace was labelled after its Pods were created.
	nsLate := newNamespace(t, "audit-late", nil)
	late := batch("late", 30)
	createPods(t, nsLate, late, false)
	lateCreated := time.Now()
	expect(nsLate, late, truth{"missing", "namespace-labelled-after"})

	// not-selected and spoofed (a hand-written record naming a container
	// the Pod lacks) in a namespace graft does not select.
	nsOff := newNamespace(t, "audit-off", nil)
	off := batch("plain", 30)
	createPods(t, nsOff, off, false)
	expect(nsOff, off, truth{"not-selected", "namespace-not-selected"})
	spoofed := batch("spoofed", 30, func(p *corev1.Pod) {
		p.Annotations = map[string]string{inject.StatusAnnotation: `{"version":2,"injected":["graft-agent"],"templates":[{"name":"agent","revision":"default","digest":"0123456789abcdef","initContainers":["graft-agent"]}]}`}
	})
	createPods(t, nsOff, spoofed, false)
	expect(nsOff, spoofed, truth{"spoofed", "absent-containers"})

	// conflict under onConflict: keep, through graft.
	nsKeep := newNamespace(t, "audit-keep", map[string]string{names.Inject: "keep"})
	registerWebhooks(t, "graft-e2e-audit-keep", scopedGraftWebhook("keep.audit.e2e.graft.dev", nsKeep, "/inject/keep"))
	ownAgent := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "graft-agent", Image: "registry.invalid/mine:1"}}
	}
	keep := batch("keep", 20, ownAgent)
	// The registration takes effect asynchronously: wait for graft's
	// warning on a dry run before creating.
	warnClient, warned := clientWithWarnings(t)
	waitFor(t, "the keep webhook", func(ctx context.Context) error {
		return keepWarns(ctx, warnClient, warned, nsKeep, batch("probe", 1, ownAgent)[0])
	})
	createPods(t, nsKeep, keep, false)
	expect(nsKeep, keep, truth{"conflict", ""})

	// missing and conflict (onConflict: deny): created while graft is down
	// under the shipped failurePolicy Ignore.
	nsDown := newNamespace(t, "audit-down", enabled)
	down := batch("down", 50)
	clash := batch("clash", 20, ownAgent)
	if err := env.cluster.StopGraft(); err != nil {
		t.Fatal(err)
	}
	createPods(t, nsDown, down, false)
	createPods(t, nsDown, clash, false)
	if err := env.cluster.StartGraft(t.Context()); err != nil {
		t.Fatal(err)
	}
	expect(nsDown, down, truth{"missing", "admitted-without-graft"})
	expect(nsDown, clash, truth{"conflict", ""})
	// managedFields and creationTimestamp count whole seconds: label in a
	// later second than the last create.
	time.Sleep(time.Until(lateCreated.Truncate(time.Second).Add(1100 * time.Millisecond)))
	labelNamespace(t, nsLate, enabled)

	if len(want) < 300 {
		t.Fatalf("only %d Pods in the mix", len(want))
	}
	kubeconfig := writeKubeconfig(t)
	out, code := runAudit(t, kubeconfig, "-A", "-o", "json", "--chunk-size", "37")
	if code != 0 {
		t.Fatalf("graft audit -o json: exit %d", code)
	}
	var rep auditReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("graft audit -o json: %v\n%s", err, out)
	}
	if rep.APIVersion != "audit.graft.dev/v1alpha1" || rep.Kind != "AuditReport" {
		t.Errorf("report is %s %s", rep.APIVersion, rep.Kind)
	}
	seen, agree := 0, 0
	for _, p := range rep.Pods {
		tr, ok := want[p.Namespace+"/"+p.Name]
		if !ok {
			continue
		}
		seen++
		if p.Class == tr.class && p.Cause == tr.cause {
			agree++
		} else {
			t.Errorf("%s/%s: %s/%s, want %s/%s (%s)", p.Namespace, p.Name, p.Class, p.Cause, tr.class, tr.cause, p.Detail)
		}
		if tr.class == "stale" && !strings.Contains(p.Detail, "image "+auditOldImage+" -> ") {
			t.Errorf("%s/%s: detail %q does not name the image change", p.Namespace, p.Name, p.Detail)
		}
		if tr.class == "current" && (p.Workload.Kind != "Deployment" || p.Workload.Name != "web") {
			t.Errorf("%s/%s: workload %s/%s, want Deployment/web", p.Namespace, p.Name, p.Workload.Kind, p.Workload.Name)
		}
	}
	t.Logf("graft audit agrees on %d of %d known Pods (%d listed)", agree, len(want), seen)
	if seen != len(want) {
		t.Errorf("audit listed %d of the %d Pods", seen, len(want))
	}
	var web bool
	for _, w := range rep.Workloads {
		if w.Namespace == nsCurrent && w.Kind == "Deployment" && w.Name == "web" {
			web = w.Pods == 100 && w.Classes["current"] == 100 && w.Class == "current"
		}
	}
	if !web {
		t.Error("workloads: no Deployment web with 100 current Pods")
	}

	// The table, per Pod and per workload.
	table, _ := runAudit(t, kubeconfig, "-n", nsStale)
	lines := strings.Split(strings.TrimSpace(string(table)), "\n")
	if len(lines) != 61 || strings.Join(strings.Fields(lines[0]), " ") != "NAMESPACE POD CLASS REVISION DETAIL" {
		t.Errorf("table: %d lines, header %q", len(lines), lines[0])
	}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) < 5 || f[0] != nsStale || f[2] != "stale/revision-changed" || f[3] != "default" {
			t.Errorf("table line %q", l)
		}
	}
	wl, _ := runAudit(t, kubeconfig, "-n", nsCurrent, "--workloads")
	if !bytes.Contains(wl, []byte("deployment/web")) || !bytes.Contains(wl, []byte("current=100")) || !bytes.Contains(wl, []byte("opted-out=1")) {
		t.Errorf("workloads table:\n%s", wl)
	}

	// Without -n, the kubeconfig context's namespace, as kubectl does;
	// -A every namespace.
	scoped, _ := runAudit(t, writeKubeconfigIn(t, nsStale))
	lines = strings.Split(strings.TrimSpace(string(scoped)), "\n")
	if len(lines) != 61 {
		t.Errorf("audit in the context's namespace %s: %d lines, want 61", nsStale, len(lines))
	}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) < 1 || f[0] != nsStale {
			t.Errorf("audit in the context's namespace %s: line %q", nsStale, l)
		}
	}
	if all, _ := runAudit(t, writeKubeconfigIn(t, nsStale), "-A"); !bytes.Contains(all, []byte(nsCurrent+" ")) {
		t.Errorf("audit -A with a context namespace: no Pod of %s", nsCurrent)
	}

	// Prometheus text, as a textfile collector reads it.
	prom, _ := runAudit(t, kubeconfig, "-A", "-o", "prometheus")
	// Legacy names: what a textfile collector of any age accepts.
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(prom))
	if err != nil {
		t.Fatalf("prometheus output does not parse: %v\n%s", err, prom)
	}
	podsGauge := func(fams map[string]*dto.MetricFamily, ns, class, rev string) float64 {
		for _, m := range fams["graft_audit_pods"].GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["namespace"] == ns && l["class"] == class && l["revision"] == rev {
				return m.GetGauge().GetValue()
			}
		}
		return -1
	}
	checkCounts := func(source string, fams map[string]*dto.MetricFamily) {
		for _, c := range []struct {
			ns, class, rev string
			n              float64
		}{
			{nsCurrent, "current", "default", 100}, {nsCurrent, "opted-out", "", 30}, {nsStale, "stale", "default", 60},
			{nsDown, "missing", "", 50}, {nsDown, "conflict", "", 20}, {nsOff, "spoofed", "default", 30}, {nsKeep, "conflict", "", 20},
		} {
			if got := podsGauge(fams, c.ns, c.class, c.rev); got != c.n {
				t.Errorf("%s: graft_audit_pods{namespace=%q,class=%q,revision=%q} = %v, want %v", source, c.ns, c.class, c.rev, got, c.n)
			}
		}
		if f := fams["graft_audit_last_run_timestamp_seconds"]; f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge().GetValue() <= 0 {
			t.Errorf("%s: no graft_audit_last_run_timestamp_seconds", source)
		}
	}
	checkCounts("-o prometheus", fams)

	// The exporter deploy/components/audit runs serves the same counts,
	// and counts its runs.
	exp := startAuditExporter(t, kubeconfig, "-A")
	served := scrape(t, plainHTTP, exp.url+"/metrics", "")
	checkCounts("graft audit --serve", served)
	var ok float64
	for _, m := range served["graft_audit_runs_total"].GetMetric() {
		if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == "success" {
			ok = m.GetCounter().GetValue()
		}
	}
	if ok < 1 {
		t.Errorf("graft_audit_runs_total{result=\"success\"} = %v after the first report", ok)
	}

	// Live explain: the webhook's decision and the audit class.
	for _, c := range []struct {
		ref, ns string
		want    []string
	}{
		{"pod/" + stale[0].Name, nsStale, []string{"(read from the cluster)", "label:      graft.dev/inject=enabled (its Namespace in the cluster)",
			"decision:   inject", "revision:   default", "audit:      stale (revision-changed)", "image " + auditOldImage + " -> "}},
		{"pod/" + current[0].Name, nsCurrent, []string{"reason:     already-injected", "audit:      current", "patch: none"}},
		{"po/" + down[0].Name, nsDown, []string{"audit:      missing (admitted-without-graft)", "op: add"}},
		{"deploy/web", nsCurrent, []string{"deployment/web in namespace audit-current", "decision:   inject", "templates:  agent"}},
		{"pod/" + off[0].Name, nsOff, []string{"decision:   not-selected", "audit:      not-selected (namespace-not-selected)"}},
	} {
		out := explainLive(t, kubeconfig, c.ref, c.ns)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("graft explain %s -n %s does not say %q:\n%s", c.ref, c.ns, w, out)
			}
		}
	}

	// --fail-on: 3 when a Pod is in a listed class, 0 otherwise.
	if _, code := runAudit(t, kubeconfig, "-n", nsStale, "--fail-on", "stale,missing,spoofed"); code != 3 {
		t.Errorf("--fail-on stale in %s: exit %d, want 3", nsStale, code)
	}
	if _, code := runAudit(t, kubeconfig, "-n", nsCurrent, "--fail-on", "stale,missing,spoofed"); code != 0 {
		t.Errorf("--fail-on stale,missing,spoofed in %s: exit %d, want 0", nsCurrent, code)
	}
}

// explainLive runs graft explain KIND/NAME against the suite's cluster.
func explainLive(t *testing.T, kubeconfig, ref, ns string) string {
	t.Helper()
	out, err := exec.Command(graftBin(t), "explain", ref, "-n", ns, "--kubeconfig", kubeconfig, "--config", env.cluster.GraftConfigPath()).CombinedOutput()
	if err != nil {
		t.Fatalf("graft explain %s: %v\n%s", ref, err, out)
	}
	return string(out)
}

// runAudit runs graft audit with the suite's configuration; it returns
// stdout and the exit code.
func runAudit(t *testing.T, kubeconfig string, args ...string) ([]byte, int) {
	t.Helper()
	cmd := exec.Command(graftBin(t), append([]string{"audit", "--kubeconfig", kubeconfig, "--config", env.cluster.GraftConfigPath()}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		if exit.ExitCode() == 1 {
			t.Fatalf("graft audit %v: %s", args, stderr.String())
		}
		return stdout.Bytes(), exit.ExitCode()
	case err != nil:
		t.Fatalf("graft audit %v: %v", args, err)
	}
	return stdout.Bytes(), 0
}

// writeKubeconfig writes a kubeconfig reaching the suite's API server.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.cluster.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeKubeconfigIn writes a kubeconfig whose context names namespace.
func writeKubeconfigIn(t *testing.T, namespace string) string {
	t.Helper()
	path := writeKubeconfig(t)
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		t.Fatalf("kubeconfig %s has no current context", path)
	}
	ctx.Namespace = namespace
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// createPods creates pods in ns, eight at a time; injected says whether
// each must come back with graft's record.
func createPods(t *testing.T, ns string, pods []*corev1.Pod, injected bool) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(pods))
	work := make(chan *corev1.Pod)
	for range 8 {
		wg.Go(func() {
			for p := range work {
				got, err := env.client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{})
				switch {
				case err != nil:
					errs <- fmt.Errorf("create %s/%s: %w", ns, p.Name, err)
				case injected && !isInjected(got):
					errs <- fmt.Errorf("%s/%s came back without graft's record", ns, p.Name)
				}
			}
		})
	}
	for _, p := range pods {
		work <- p
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// deploymentPods lists the n Pods of Deployment name (labelled
// app=<name>, as newDeployment labels them).
func deploymentPods(t *testing.T, ns, name string, n int) []*corev1.Pod {
	t.Helper()
	list, err := env.client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != n {
		t.Fatalf("Deployment %s/%s has %d Pods, want %d", ns, name, len(list.Items), n)
	}
	out := make([]*corev1.Pod, n)
	for i := range list.Items {
		out[i] = &list.Items[i]
		if !isInjected(out[i]) {
			t.Fatalf("%s/%s came back without graft's record", ns, out[i].Name)
		}
	}
	return out
}

// oldAgentConfig writes the suite's configuration with the default
// profile's agent image changed, and returns its path.
func oldAgentConfig(t *testing.T) string {
	t.Helper()
	path := env.cluster.GraftConfigPath()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := config.Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	p := f.Profiles["agent"]
	p.Params = map[string]map[string]string{"agent": {"image": auditOldImage}}
	f.Profiles["agent"] = p
	out, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(t.TempDir(), "old.yaml")
	if err := os.WriteFile(old, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return old
}

// injectOffline runs pods through graft inject with configFile, as if
// their namespace selected the default profile.
func injectOffline(t *testing.T, ns, configFile string, pods []*corev1.Pod) []*corev1.Pod {
	t.Helper()
	var in bytes.Buffer
	for _, p := range pods {
		p.APIVersion, p.Kind, p.Namespace = "v1", "Pod", ns
		b, err := yaml.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		in.WriteString("---\n")
		in.Write(b)
	}
	cmd := exec.Command(graftBin(t), "inject", "-q", "--config", configFile, "--namespace-labels", names.Inject+"=enabled", "-f", "-")
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("graft inject: %v", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var got []*corev1.Pod
	for {
		var p corev1.Pod
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.Annotations[inject.StatusAnnotation]; !ok {
			t.Fatalf("graft inject left %s without a record", p.Name)
		}
		got = append(got, &p)
	}
	if len(got) != len(pods) {
		t.Fatalf("graft inject wrote %d Pods, want %d", len(got), len(pods))
	}
	return got
}

// labelNamespace sets labels on ns.
func labelNamespace(t *testing.T, ns string, labels map[string]string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.client.CoreV1().Namespaces().Patch(t.Context(), ns, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// keepWarns dry-runs p in ns through c and succeeds once graft answered
// it (with onConflict: keep, a warning naming the container).
func keepWarns(ctx context.Context, c kubernetes.Interface, w *warnings, ns string, p *corev1.Pod) error {
	if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		return err
	}
	if !slices.ContainsFunc(w.all(), func(m string) bool { return strings.Contains(m, "graft-agent") }) {
		return errors.New("no warning from graft yet")
	}
	return nil
}
