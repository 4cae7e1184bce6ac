package realnode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/e2e/internal/images"
	"github.com/graftdev/graft/e2e/internal/realcluster"
	"github.com/graftdev/graft/e2e/internal/standin"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/ociimage"
	"github.com/graftdev/graft/internal/proc"
)

// The profile the rollout and watchdog tests inject: one native sidecar
// with a startup probe.
const (
	upgradeProfile  = "otel-agent"
	upgradeTemplate = "otel-agent"
	upgradeSidecar  = "graft-otel-agent"
)

// graftConfigMap is graft's configuration as the cluster holds it.
func graftConfigMap(t *testing.T, c *realcluster.Cluster) *corev1.ConfigMap {
	t.Helper()
	// Not the test's context: the cleanup restoring it runs after it ends.
	cm, err := c.Client.CoreV1().ConfigMaps(c.Graft.Deployment.Namespace).Get(context.Background(), "graft-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// setGraftConfig replaces graft's config.yaml in its ConfigMap, and waits
// until graft (which reloads it once the kubelet updates the mounted
// volume) injects Pods of ns at revision.
func setGraftConfig(t *testing.T, c *realcluster.Cluster, config []byte, ns, revision string) {
	t.Helper()
	cm := graftConfigMap(t, c)
	cm.Data["config.yaml"] = string(config)
	if _, err := c.Client.CoreV1().ConfigMaps(cm.Namespace).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := deployment("probe", appContainer())
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}, Spec: d.Spec.Template.Spec}
	err := poll(ctx, time.Second, func(ctx context.Context) error {
		p, err := c.Client.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if got := p.Labels[names.Injected]; got != revision {
			return fmt.Errorf("injected at %q, want %q", got, revision)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("graft never served its new configuration: %v", err)
	}
}

// TestRealRolloutInPlace: a revision of graft's configuration that changes
// only the otel-agent sidecar's image; `graft rollout --in-place --apply`
// patches the running Pod, and the kubelet restarts the sidecar alone:
// the same Pod, the app container with the same container ID and no
// restart, the sidecar a new container running the new image, Ready.
func TestRealRolloutInPlace(t *testing.T) {
	c := need(t)
	ns := profileNamespace(t, c, "real-in-place", upgradeProfile)
	if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), deployment("app", appContainer()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitAvailable(t, c, ns, "app")[0]
	appBefore, _ := containerStatus(&before, "app")
	sidecarBefore, _ := containerStatus(&before, upgradeSidecar)

	// The new image: the same stand-in with a file more, so its digest
	// differs, under a new name.
	const next = "localhost/graft-e2e/opentelemetry-collector:next"
	defaults, err := realcluster.TemplateImages()
	if err != nil {
		t.Fatal(err)
	}
	spec, ok := standin.ForTemplate(upgradeTemplate, next)
	if !ok {
		t.Fatalf("no stand-in for %s (its default image %s)", upgradeTemplate, defaults[upgradeTemplate])
	}
	spec.Files = append(spec.Files, ociimage.File{Path: "/etc/graft-e2e-revision", Mode: fs.FileMode(0o644), Data: []byte("next\n")})
	archive, err := images.Build(t.Context(), t.TempDir(), spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if err := n.Import(t.Context(), archive); err != nil {
			t.Fatal(err)
		}
	}

	// Revision "next": the shipped profile with the new image, the
	// default for namespaces without graft.dev/rev.
	orig := graftConfigMap(t, c).Data["config.yaml"]
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(orig), &doc); err != nil {
		t.Fatal(err)
	}
	profiles, _ := doc["profiles"].(map[string]any)
	profile, _ := profiles[upgradeProfile].(map[string]any)
	if profile == nil {
		t.Fatalf("deploy/base/config.yaml has no profile %s", upgradeProfile)
	}
	moved := map[string]any{}
	for k, v := range profile {
		moved[k] = v
	}
	moved["params"] = map[string]any{upgradeTemplate: map[string]any{"image": next}}
	doc["revisions"] = map[string]any{"next": map[string]any{"profiles": map[string]any{upgradeProfile: moved}}}
	doc["defaultRevision"] = "next"
	config, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(configFile, config, 0o600); err != nil {
		t.Fatal(err)
	}
	// As the docs say: the guarantee policies follow the revisions, so
	// they are generated and applied again (the webhooks need not be: a
	// move of the default revision keeps their selectors).
	guarantee := runGraft(t, "guarantee", "--config", configFile, "--templates-dir", filepath.Join(c.Graft.Dir, "base", "templates"))
	firstRevision := before.Labels[names.Injected]
	t.Cleanup(func() {
		if err := c.ApplyObjects(context.Background(), shippedPolicies(c)); err != nil {
			t.Errorf("restore the shipped guarantee: %v", err)
		}
		setGraftConfig(t, c, []byte(orig), ns, firstRevision)
	})
	if err := c.ApplyYAML(t.Context(), guarantee); err != nil {
		t.Fatal(err)
	}
	setGraftConfig(t, c, config, ns, "next")

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	out := runGraft(t, "rollout", "--kubeconfig", kubeconfig, "--config", configFile,
		"-n", ns, "-o", "json", "--apply", "--in-place")
	var res struct {
		Items []struct {
			Name, Action, State, Message string
		} `json:"items"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.Items) != 1 || res.Items[0].Action != "in-place" || res.Items[0].State != "done" {
		t.Fatalf("graft rollout: %+v, want the Deployment upgraded in place", res.Items)
	}

	// The kubelet restarts the sidecar with its new image.
	ctx, cancel := context.WithTimeout(t.Context(), podReady)
	defer cancel()
	var after *corev1.Pod
	err = poll(ctx, 500*time.Millisecond, func(ctx context.Context) error {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs, _ := containerStatus(p, upgradeSidecar)
		if cs.ContainerID == sidecarBefore.ContainerID || cs.State.Running == nil || !cs.Ready {
			return fmt.Errorf("sidecar %s: not yet a new, ready container: %+v", upgradeSidecar, cs.State)
		}
		after = p
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, c.PodsReport(context.Background(), ns))
	}
	appAfter, _ := containerStatus(after, "app")
	sidecarAfter, _ := containerStatus(after, upgradeSidecar)
	switch {
	case after.UID != before.UID:
		t.Errorf("the Pod was replaced (uid %s, was %s)", after.UID, before.UID)
	case appAfter.ContainerID != appBefore.ContainerID || appAfter.RestartCount != 0:
		t.Errorf("the app container was restarted: %s (restarts %d), was %s", appAfter.ContainerID, appAfter.RestartCount, appBefore.ContainerID)
	case sidecarAfter.Image != next && sidecarAfter.Image != "docker.io/"+next:
		t.Errorf("the sidecar runs %s, want %s", sidecarAfter.Image, next)
	case sidecarAfter.ImageID == sidecarBefore.ImageID:
		t.Errorf("the sidecar runs the image it ran before (%s)", sidecarAfter.ImageID)
	case after.Labels[names.Injected] != "next":
		t.Errorf("Pod label %s=%q, want next", names.Injected, after.Labels[names.Injected])
	}
	t.Logf("in place: sidecar %s -> %s (%s), app container %s kept", sidecarBefore.ContainerID, sidecarAfter.ContainerID, sidecarAfter.Image, appAfter.ContainerID)
}

// TestRealWatchdogReplacesPodAdmittedInOutage: with graft's replicas scaled
// to zero and its profile's guarantee relaxed to Audit (so the fail-open
// webhook admits a Pod without its sidecar), a Deployment's Pod runs
// uninjected; once graft is back, graft watchdog restarts the Deployment,
// and its new Pod runs with its sidecar started and ready.
func TestRealWatchdogReplacesPodAdmittedInOutage(t *testing.T) {
	c := need(t)
	ns := profileNamespace(t, c, "real-watchdog", upgradeProfile)
	patchNamespaceLabel(t, c, ns, names.Watchdog, "enabled")
	relaxGuarantee(t, c, upgradeProfile)

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(configFile, c.Graft.Config, 0o600); err != nil {
		t.Fatal(err)
	}
	leaseNS := profileNamespace(t, c, "real-watchdog-lease", "")
	addrs, err := proc.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	watchdog, err := proc.Start(proc.Spec{Name: "watchdog", Dir: t.TempDir(), Bin: rigGraft(t), Args: []string{
		"watchdog", "--kubeconfig", kubeconfig, "--config", configFile, "--lease-namespace", leaseNS,
		"--identity", "e2e", "--metrics-addr", addrs[0].String(), "--grace", "5s", "--retry", "2s",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("graft watchdog's log:\n%s", watchdog.Tail(8<<10))
		}
		_ = watchdog.Stop(10 * time.Second)
	})

	replicas := scaleGraft(t, c, 0)
	t.Cleanup(func() { scaleGraft(t, c, replicas) })
	if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), deployment("app", appContainer()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admitted := waitAvailable(t, c, ns, "app")[0]
	if _, ok := admitted.Annotations[names.Status]; ok || len(nativeSidecars(&admitted)) > 0 {
		t.Fatal("a Pod created while graft was down was injected")
	}
	scaleGraft(t, c, replicas)

	ctx, cancel := context.WithTimeout(t.Context(), 2*podReady)
	defer cancel()
	err = poll(ctx, time.Second, func(ctx context.Context) error {
		list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 || list.Items[0].UID == admitted.UID {
			return fmt.Errorf("%d Pods, the one admitted in the outage among them or not yet replaced", len(list.Items))
		}
		p := &list.Items[0]
		cs, ok := containerStatus(p, upgradeSidecar)
		if _, injected := p.Annotations[names.Status]; !injected || !ok || cs.State.Running == nil || !cs.Ready {
			return fmt.Errorf("Pod %s: sidecar not running and ready yet", p.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, c.PodsReport(context.Background(), ns))
	}
}

// scaleGraft sets graft's replicas and waits for them (all gone for 0,
// else all available and injecting); it returns the replicas it had.
func scaleGraft(t *testing.T, c *realcluster.Cluster, replicas int32) int32 {
	t.Helper()
	d := c.Graft.Deployment
	scale, err := c.Client.AppsV1().Deployments(d.Namespace).GetScale(context.Background(), d.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	had := scale.Spec.Replicas
	scale.Spec.Replicas = replicas
	if _, err := c.Client.AppsV1().Deployments(d.Namespace).UpdateScale(context.Background(), d.Name, scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if replicas > 0 {
		if err := c.Graft.WaitReady(context.Background(), c.Cluster); err != nil {
			t.Fatal(err)
		}
		return had
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = poll(ctx, 500*time.Millisecond, func(ctx context.Context) error {
		pods, err := c.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
		if err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d graft Pods left", len(pods.Items))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return had
}

// relaxGuarantee sets the profile's guarantee policy binding to Audit
// for the test, as a platform team relying on the watchdog does.
func relaxGuarantee(t *testing.T, c *realcluster.Cluster, profile string) {
	t.Helper()
	bindings := c.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	name := "graft-injection-required-" + profile
	b, err := bindings.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	was := b.Spec.ValidationActions
	set := func(actions []admissionv1.ValidationAction) error {
		b, err := bindings.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		b.Spec.ValidationActions = actions
		_, err = bindings.Update(context.Background(), b, metav1.UpdateOptions{})
		return err
	}
	if err := set([]admissionv1.ValidationAction{admissionv1.Audit}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := set(was); err != nil {
			t.Errorf("restore %s: %v", name, err)
		}
	})
}

func patchNamespaceLabel(t *testing.T, c *realcluster.Cluster, ns, key, value string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{key: value}}})
	if _, err := c.Client.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// rigGraft is the graft binary the harness runs commands with.
func rigGraft(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("GRAFT_E2E_GRAFT")
	if bin == "" {
		t.Fatal(errors.New("GRAFT_E2E_GRAFT is not set"))
	}
	return bin
}

// runGraft runs the graft binary and returns its standard output; a
// failure fails the test with its standard error.
func runGraft(t *testing.T, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), rigGraft(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("graft %v: %v\nstderr:\n%s\nstdout:\n%s", args, err, stderr.Bytes(), stdout.Bytes())
	}
	return stdout.Bytes()
}

// shippedPolicies are the guarantee's policies and bindings as installed.
func shippedPolicies(c *realcluster.Cluster) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range c.Graft.Objects {
		if o.GetKind() == "ValidatingAdmissionPolicy" || o.GetKind() == "ValidatingAdmissionPolicyBinding" {
			out = append(out, o)
		}
	}
	return out
}
