package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/graftdev/graft/internal/names"
)

// liveProfile is a profile only the cluster's graft-config holds; it
// injects internal/live/testdata/team-agent.yaml, a template only the
// cluster's graft-templates ConfigMap holds (internal/live's tests use
// the same file).
const liveProfile = "team-agent"

// TestLiveCommandsReadClusterConfig: graft's Deployment and ConfigMaps
// as `kustomize build deploy/base` makes them, with a profile and a
// template of the cluster's own added to the ConfigMaps, are what live
// graft audit and graft explain judge a namespace labelled with that
// profile by (no --config); with --config they judge by the file, which
// knows no such profile. Each says which configuration it used. Live
// explain of the Deployment shows its patch with the Deployment's paths
// and names its Pods that lack the sidecar.
func TestLiveCommandsReadClusterConfig(t *testing.T) {
	needsWorkloads(t)
	graftNS := newNamespace(t, "live-graft", nil)
	installShipped(t, graftNS)
	appNS := newNamespace(t, "live-team", map[string]string{names.Inject: liveProfile})
	// No webhook serves the profile (the suite's graft knows none such):
	// the Pods are created without graft and are missing its sidecar.
	createDeployments(t, appNS, newDeployment("web", 2))
	waitRolledOut(t, appNS)
	kubeconfig := writeKubeconfig(t)
	fromCluster := "graft: configuration: ConfigMap " + graftNS + "/graft-config key config.yaml with the templates of ConfigMap " +
		graftNS + "/graft-templates, mounted by Deployment " + graftNS + "/graft"

	live := func(args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(graftBin(t), append(args, "--kubeconfig", kubeconfig)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("graft %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
		}
		return out.String(), errOut.String()
	}
	audited := func(out string) []auditPod {
		t.Helper()
		var rep auditReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("graft audit -o json: %v\n%s", err, out)
		}
		if len(rep.Pods) != 2 {
			t.Fatalf("graft audit listed %d Pods of %s, want 2", len(rep.Pods), appNS)
		}
		return rep.Pods
	}

	// The cluster's configuration: the profile exists, so the Pods are
	// missing its sidecar.
	out, stderr := live("audit", "-n", appNS, "-o", "json", "--graft-namespace", graftNS)
	if !strings.Contains(stderr, fromCluster) {
		t.Errorf("graft audit does not say %q:\n%s", fromCluster, stderr)
	}
	for _, p := range audited(out) {
		if p.Class != "missing" || strings.Contains(p.Detail, "names no profile") {
			t.Errorf("cluster's configuration: %s is %s/%s (%s), want missing", p.Name, p.Class, p.Cause, p.Detail)
		}
	}
	// --config overrides: the suite's file knows no such profile.
	file := env.cluster.GraftConfigPath()
	out, stderr = live("audit", "-n", appNS, "-o", "json", "--graft-namespace", graftNS, "--config", file)
	if want := "graft: configuration: file " + file; !strings.Contains(stderr, want) {
		t.Errorf("graft audit --config does not say %q:\n%s", want, stderr)
	}
	for _, p := range audited(out) {
		if !strings.Contains(p.Detail, "names no profile") {
			t.Errorf("--config: %s is %s/%s (%s), want the profile named unknown", p.Name, p.Class, p.Cause, p.Detail)
		}
	}

	// Live explain of the Deployment injects the cluster's template.
	out, stderr = live("explain", "deploy/web", "-n", appNS, "--graft-namespace", graftNS)
	if !strings.Contains(stderr, fromCluster) {
		t.Errorf("graft explain does not say %q:\n%s", fromCluster, stderr)
	}
	// Its patch is the Deployment's, and it names the Deployment's Pods
	// that lack the sidecar, as graft audit classes them.
	t.Logf("graft explain deploy/web -n %s:\n%s", appNS, out)
	for _, w := range []string{"decision:   inject", "profile:    " + liveProfile, "templates:  team-agent", "name: graft-team-agent",
		"path: /spec/template/spec/initContainers", "pods:       2 (missing 2)", "pods that differ from what graft would inject now:", "    - web-"} {
		if !strings.Contains(out, w) {
			t.Errorf("graft explain deploy/web does not say %q:\n%s", w, out)
		}
	}
	out, _ = live("explain", "deploy/web", "-n", appNS, "--graft-namespace", graftNS, "-o", "json")
	var ex struct {
		Configuration string `json:"configuration"`
		Profile       string `json:"profile"`
	}
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatalf("graft explain -o json: %v\n%s", err, out)
	}
	if "graft: configuration: "+ex.Configuration != fromCluster || ex.Profile != liveProfile {
		t.Errorf("graft explain -o json: configuration %q, profile %q", ex.Configuration, ex.Profile)
	}
}

// installShipped creates in ns graft's Deployment and its two ConfigMaps
// as `kustomize build deploy/base` makes them, the cluster's own profile
// and template added. The Deployment runs no replicas: only what it
// mounts matters here, and the suite's graft serves the webhooks.
func installShipped(t *testing.T, ns string) {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot, "deploy", "base"))
	if err != nil {
		t.Fatalf("kustomize build deploy/base: %v", err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	var created int
	for _, u := range decodeObjects(t, out) {
		switch {
		case u.GetKind() == "Deployment" && u.GetName() == "graft":
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
				t.Fatal(err)
			}
			d.Namespace = ns
			zero := int32(0)
			d.Spec.Replicas = &zero
			if _, err := env.client.AppsV1().Deployments(ns).Create(t.Context(), &d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case u.GetKind() == "ConfigMap" && (u.GetName() == "graft-config" || u.GetName() == "graft-templates"):
			var cm corev1.ConfigMap
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cm); err != nil {
				t.Fatal(err)
			}
			cm.Namespace = ns
			if cm.Name == "graft-config" {
				cfg := cm.Data["config.yaml"]
				cm.Data["config.yaml"] = strings.Replace(cfg, "profiles:\n", "profiles:\n  "+liveProfile+":\n    templates: [team-agent]\n", 1)
				if cm.Data["config.yaml"] == cfg {
					t.Fatal("deploy/base's config.yaml has no profiles: key")
				}
			} else {
				tmpl, err := os.ReadFile(filepath.Join("..", "internal", "live", "testdata", "team-agent.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				cm.Data["team-agent.yaml"] = string(tmpl)
			}
			if _, err := env.client.CoreV1().ConfigMaps(ns).Create(t.Context(), &cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		default:
			continue
		}
		created++
	}
	if created != 3 {
		t.Fatalf("deploy/base: found %d of graft's Deployment and two ConfigMaps", created)
	}
}
