package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/internal/names"
)

// rolloutResult is `graft rollout -o json`.
type rolloutResult struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Items      []struct {
		Namespace string `json:"namespace"`
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Action    string `json:"action"`
		State     string `json:"state"`
		Message   string `json:"message"`
		Pods      []struct {
			Name    string `json:"name"`
			Class   string `json:"class"`
			Refusal string `json:"inPlaceRefusal"`
			Detail  string `json:"detail"`
		} `json:"pods"`
	} `json:"items"`
	Summary struct {
		Owners  int            `json:"owners"`
		Pods    int            `json:"pods"`
		States  map[string]int `json:"states"`
		Seconds float64        `json:"seconds"`
	} `json:"summary"`
}

// runGraft runs the graft binary with args; it returns stdout, stderr and
// the exit code (failing the test when graft could not run).
func runGraft(t *testing.T, args ...string) ([]byte, string, int) {
	t.Helper()
	cmd := exec.Command(graftBin(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.Bytes(), stderr.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("graft %v: %v", args, err)
	}
	return stdout.Bytes(), stderr.String(), 0
}

// moveRevision adds to the configuration graft serves a revision whose
// agent image is image, makes it the default, and waits until graft
// injects it; the test's cleanup puts the configuration back and waits
// for graft to serve it again. It returns the revision's name.
func moveRevision(t *testing.T, name, image string) string {
	t.Helper()
	path := env.cluster.GraftConfigPath()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(orig, &doc); err != nil {
		t.Fatal(err)
	}
	revs, _ := doc["revisions"].(map[string]any)
	if revs == nil {
		revs = map[string]any{}
	}
	revs[name] = map[string]any{"profiles": map[string]any{"agent": map[string]any{
		"templates": []string{"agent"}, "params": map[string]any{"agent": map[string]any{"image": image}}}}}
	doc["revisions"], doc["defaultRevision"] = revs, name
	moved, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	probe := optedIn(t, "e2e-revision-"+name)
	if err := env.waitInjecting(t.Context(), probe); err != nil {
		t.Fatal(err)
	}
	writeConfig := func(b []byte) error { return os.WriteFile(path, b, 0o600) }
	if err := writeConfig(moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := writeConfig(orig); err != nil {
			t.Errorf("restore graft's configuration: %v", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := waitServing(ctx, probe, "default"); err != nil {
			t.Errorf("graft never served its configuration again: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := waitServing(ctx, probe, name); err != nil {
		t.Fatalf("graft never served revision %s: %v", name, err)
	}
	return name
}

// waitServing waits until a Pod created (dry run) in ns is injected at
// revision.
func waitServing(ctx context.Context, ns, revision string) error {
	for {
		p, err := env.client.CoreV1().Pods(ns).Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil && p.Labels[names.Injected] == revision {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v, label %q)", ctx.Err(), err, p.Labels[names.Injected])
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// auditClasses runs graft audit -n ns and counts its Pods per class.
func auditClasses(t *testing.T, kubeconfig, ns string) map[string]int {
	t.Helper()
	out, code := runAudit(t, kubeconfig, "-n", ns, "-o", "json")
	if code != 0 {
		t.Fatalf("graft audit -n %s: exit %d", ns, code)
	}
	var rep auditReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, p := range rep.Pods {
		counts[p.Class]++
	}
	return counts
}

// budgetWatch records every PodDisruptionBudget status of a namespace
// that shows fewer healthy Pods than the budget wants: a violation.
type budgetWatch struct {
	mu         sync.Mutex
	violations []string
	updates    int
	stop       func()
	done       chan struct{}
}

func watchBudgets(t *testing.T, ns string) *budgetWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := env.client.PolicyV1().PodDisruptionBudgets(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	b := &budgetWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*policyv1.PodDisruptionBudget)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			b.mu.Lock()
			b.updates++
			if p.Status.ObservedGeneration >= p.Generation && p.Status.ExpectedPods > 0 && p.Status.CurrentHealthy < p.Status.DesiredHealthy {
				b.violations = append(b.violations, fmt.Sprintf("%s: %d healthy, %d desired", p.Name, p.Status.CurrentHealthy, p.Status.DesiredHealthy))
			}
			b.mu.Unlock()
		}
	}()
	return b
}

func (b *budgetWatch) finish() ([]string, int) {
	b.stop()
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.violations, b.updates
}

// podUIDs maps the Pods of ns (not being deleted) matching selector to
// their uids.
func podUIDs(t *testing.T, ns, selector string) map[string]types.UID {
	t.Helper()
	l, err := env.client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p.UID
		}
	}
	return out
}

// rolloutDeployments is how many Deployments TestRolloutConverges rolls.
const rolloutDeployments = 50

// TestRolloutConverges: 50 Deployments of 2 replicas, each with a budget
// allowing one disruption, one of them with maxUnavailable: 0; the
// default revision moves (a new agent image), so every Pod is stale. graft
// rollout --apply restarts 49 of them, 10 at a time, and skips and
// reports the one whose budget allows no disruption: afterwards the audit
// finds no stale Pod outside it, its Pods are the ones it had, and no
// budget ever had fewer healthy Pods than it wants.
func TestRolloutConverges(t *testing.T) {
	needsWorkloads(t)
	ns := optedIn(t, "e2e-rollout")
	if err := env.waitInjecting(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for i := range rolloutDeployments {
		name := fmt.Sprintf("web-%02d", i)
		createDeployments(t, ns, newDeployment(name, 2))
		maxUnavailable := intstr.FromInt32(1)
		if i == 0 {
			maxUnavailable = intstr.FromInt32(0)
		}
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &maxUnavailable,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
		}
		if _, err := env.client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitRolledOut(t, ns)
	waitFor(t, "the budgets to count their Pods", func(ctx context.Context) error {
		l, err := env.client.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, p := range l.Items {
			if p.Status.ObservedGeneration < p.Generation || p.Status.CurrentHealthy != 2 {
				return fmt.Errorf("budget %s: %+v", p.Name, p.Status)
			}
		}
		return nil
	})
	kubeconfig := writeKubeconfig(t)
	if got := auditClasses(t, kubeconfig, ns); got["current"] != 2*rolloutDeployments {
		t.Fatalf("before the move: %v, want %d current", got, 2*rolloutDeployments)
	}
	moveRevision(t, "e2e-rollout", "registry.invalid/agent:1.1.0")
	if got := auditClasses(t, kubeconfig, ns); got["stale"] != 2*rolloutDeployments {
		t.Fatalf("after the move: %v, want %d stale", got, 2*rolloutDeployments)
	}
	blocked := podUIDs(t, ns, "app=web-00")

	// The plan first: every Deployment, nothing changed.
	args := []string{"rollout", "--kubeconfig", kubeconfig, "--config", env.cluster.GraftConfigPath(), "-n", ns, "-o", "json"}
	out, stderr, code := runGraft(t, args...)
	if code != 0 {
		t.Fatalf("graft rollout (plan): exit %d: %s", code, stderr)
	}
	var plan rolloutResult
	if err := json.Unmarshal(out, &plan); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if plan.Kind != "RolloutPlan" || plan.Summary.Owners != rolloutDeployments || plan.Summary.Pods != 2*rolloutDeployments || plan.Summary.States["planned"] != rolloutDeployments {
		t.Fatalf("plan: %s %+v", plan.Kind, plan.Summary)
	}

	budgets := watchBudgets(t, ns)
	start := time.Now()
	out, stderr, code = runGraft(t, append(args, "--apply", "--max-concurrent", "10", "--timeout", "2m")...)
	took := time.Since(start)
	violations, updates := budgets.finish()
	if code != 5 {
		t.Fatalf("graft rollout --apply: exit %d, want 5 (one owner skipped for its budget)\nstderr:\n%s\nstdout:\n%s", code, stderr, out)
	}
	var res rolloutResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, it := range res.Items {
		want := "done"
		if it.Name == "web-00" {
			want = "skipped-pdb"
		}
		if it.State != want || it.Action != "restart" || it.Kind != "Deployment" {
			t.Errorf("%s %s: %s %s (%s), want restart %s", it.Kind, it.Name, it.Action, it.State, it.Message, want)
		}
	}
	if res.Summary.States["done"] != rolloutDeployments-1 || res.Summary.States["skipped-pdb"] != 1 {
		t.Errorf("result: %+v", res.Summary)
	}
	if !strings.Contains(stderr, "web-00: skipped-pdb") || !strings.Contains(stderr, "PodDisruptionBudget web-00 allows 0 disruptions") {
		t.Errorf("stderr does not report the skipped owner:\n%s", stderr)
	}
	if len(violations) > 0 {
		t.Errorf("budget violations during the rollout (%d updates watched):\n%s", updates, strings.Join(violations, "\n"))
	}
	after := auditClasses(t, kubeconfig, ns)
	if after["stale"] != 2 || after["current"] != 2*(rolloutDeployments-1) {
		t.Errorf("after graft rollout: %v; want the skipped Deployment's 2 Pods stale, %d current", after, 2*(rolloutDeployments-1))
	}
	if got := podUIDs(t, ns, "app=web-00"); fmt.Sprint(got) != fmt.Sprint(blocked) {
		t.Errorf("the skipped Deployment's Pods changed: %v, were %v", got, blocked)
	}
	t.Logf("graft rollout --apply --max-concurrent 10: %d Deployments (%d Pods) restarted and rolled out, 1 skipped for its budget, in %s; "+
		"audit afterwards: %v; budget violations: %d (of %d status updates watched)",
		res.Summary.States["done"], 2*res.Summary.States["done"], took.Round(100*time.Millisecond), after, len(violations), updates)
}

// TestRolloutInPlace: a revision that changes only the agent's image (a
// native sidecar). graft rollout --apply --in-place patches every Pod of
// three Deployments and a bare Pod in place: the same Pods (uids), the
// app container as it was, the sidecar on the new image, and the audit
// calls them current. No Deployment was restarted.
func TestRolloutInPlace(t *testing.T) {
	needsWorkloads(t)
	ns := optedIn(t, "e2e-in-place")
	if err := env.waitInjecting(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		createDeployments(t, ns, newDeployment(fmt.Sprintf("app-%d", i), 3))
	}
	createPod(t, ns, simplePod("bare"))
	waitRolledOut(t, ns)
	before := map[string]*corev1.Pod{}
	l, err := env.client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range l.Items {
		before[l.Items[i].Name] = &l.Items[i]
	}
	const image = "registry.invalid/agent:1.0.1"
	rev := moveRevision(t, "e2e-in-place", image)
	kubeconfig := writeKubeconfig(t)
	start := time.Now()
	out, stderr, code := runGraft(t, "rollout", "--kubeconfig", kubeconfig, "--config", env.cluster.GraftConfigPath(),
		"-n", ns, "-o", "json", "--apply", "--in-place")
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("graft rollout --in-place: exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr, out)
	}
	var res rolloutResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	pods := 0
	for _, it := range res.Items {
		if it.Action != "in-place" || it.State != "done" {
			t.Errorf("%s %s: %s %s (%s), want in-place done", it.Kind, it.Name, it.Action, it.State, it.Message)
		}
		pods += len(it.Pods)
	}
	if pods != len(before) {
		t.Errorf("%d Pods upgraded in place, want %d", pods, len(before))
	}
	l, err = env.client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != len(before) {
		t.Errorf("%d Pods after, %d before", len(l.Items), len(before))
	}
	for i := range l.Items {
		p := &l.Items[i]
		was, ok := before[p.Name]
		switch {
		case !ok || was.UID != p.UID:
			t.Errorf("Pod %s is not one of the Pods before", p.Name)
			continue
		case fmt.Sprint(was.Spec.Containers) != fmt.Sprint(p.Spec.Containers):
			t.Errorf("Pod %s: the app container changed", p.Name)
		case p.Labels[names.Injected] != rev:
			t.Errorf("Pod %s: %s=%q, want %q", p.Name, names.Injected, p.Labels[names.Injected], rev)
		}
		for _, c := range p.Spec.InitContainers {
			if c.Name == "graft-agent" && c.Image != image {
				t.Errorf("Pod %s: sidecar image %s, want %s", p.Name, c.Image, image)
			}
		}
	}
	for i := range 3 {
		d, err := env.client.AppsV1().Deployments(ns).Get(t.Context(), fmt.Sprintf("app-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, restarted := d.Spec.Template.Annotations[names.RestartedAt]; restarted || d.Generation != 1 {
			t.Errorf("Deployment %s was restarted (generation %d)", d.Name, d.Generation)
		}
	}
	after := auditClasses(t, kubeconfig, ns)
	if after["current"] != len(before) || len(after) != 1 {
		t.Errorf("audit after the upgrade: %v, want %d current", after, len(before))
	}
	t.Logf("graft rollout --apply --in-place: %d Pods (%d owners) upgraded in place in %s, same uids; audit afterwards: %v",
		pods, len(res.Items), took.Round(100*time.Millisecond), after)
}
