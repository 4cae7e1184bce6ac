package live

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/offline"
)

// teamTemplate is a template that exists only in the cluster's
// graft-templates ConfigMap.
var teamTemplate = readTeamTemplate()

// readTeamTemplate reads testdata/team-agent.yaml, which the e2e suite's
// live-configuration test installs too.
func readTeamTemplate() string {
	b, err := os.ReadFile(filepath.Join("testdata", "team-agent.yaml"))
	if err != nil {
		panic(fmt.Sprintf("the team-agent test template: %v", err))
	}
	return string(b)
}

// teamConfig is deploy/base's config.yaml with a profile of the cluster's
// own, team-agent, injecting teamTemplate.
func teamConfig(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "base", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(data), "profiles:\n", "profiles:\n  team-agent:\n    templates: [team-agent]\n", 1)
	if s == string(data) {
		t.Fatal("deploy/base/config.yaml has no profiles: key")
	}
	return s
}

// shippedDeployment is graft's Deployment as deploy/base ships it.
func shippedDeployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "base", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

// shippedObjects are graft's Deployment and ConfigMaps as deploy/base
// ships them, with the cluster's own profile and template.
func shippedObjects(t *testing.T) []runtime.Object {
	return []runtime.Object{
		shippedDeployment(t),
		configMap("graft-system", "graft-config", map[string]string{"config.yaml": teamConfig(t)}),
		configMap("graft-system", "graft-templates", map[string]string{"team-agent.yaml": teamTemplate}),
	}
}

// edit returns deploy/base's Deployment changed by f, in namespace ns
// under name.
func edit(t *testing.T, ns, name string, f func(*appsv1.Deployment)) *appsv1.Deployment {
	d := shippedDeployment(t)
	d.Namespace, d.Name = ns, name
	if f != nil {
		f(d)
	}
	return d
}

// GraftConfig reads what graft's Deployment mounts where graft serve's
// flags point, in the ways a pod spec can mount a ConfigMap, and says
// where it read it.
func TestGraftConfig(t *testing.T) {
	team := map[string]string{"config.yaml": teamConfig(t)}
	tmpl := map[string]string{"team-agent.yaml": teamTemplate}
	tests := []struct {
		name    string
		install Install
		objects []runtime.Object
		// source is the start of GraftConfig.Source; profile a profile
		// the engine must serve, with template a template it injects.
		source   string
		profile  string
		template string
		err      string
	}{
		{name: "deploy/base as shipped", objects: shippedObjects(t),
			source:  "ConfigMap graft-system/graft-config key config.yaml with the templates of ConfigMap graft-system/graft-templates, mounted by Deployment graft-system/graft",
			profile: "team-agent", template: "team-agent"},
		{name: "no graft installed: built-in", objects: nil,
			source: "built-in: no Deployment labelled app.kubernetes.io/name=graft in namespace graft-system", profile: "enabled", template: "mesh-proxy"},
		{name: "graft in another namespace", install: Install{Namespace: "mesh"},
			objects: []runtime.Object{edit(t, "mesh", "graft", nil), configMap("mesh", "graft-config", team), configMap("mesh", "graft-templates", tmpl)},
			source:  "ConfigMap mesh/graft-config key config.yaml", profile: "team-agent", template: "team-agent"},
		{name: "not the audit exporter, the Deployment labelled graft",
			objects: append(shippedObjects(t), edit(t, "graft-system", "graft-audit", func(d *appsv1.Deployment) {
				d.Labels = map[string]string{names.AppNameLabel: "graft-audit"}
				d.Spec.Template.Spec.Volumes[0].ConfigMap.Name = "absent"
			})),
			source: "ConfigMap graft-system/graft-config", profile: "team-agent"},
		{name: "two installs: name one", objects: append(shippedObjects(t), edit(t, "graft-system", "graft-b", nil)),
			err: "2 Deployments labelled app.kubernetes.io/name=graft in namespace graft-system (graft, graft-b)"},
		{name: "the named one", install: Install{Deployment: "graft-b"},
			objects: append(shippedObjects(t), edit(t, "graft-system", "graft-b", func(d *appsv1.Deployment) {
				d.Labels = nil
				d.Spec.Template.Spec.Volumes[0].ConfigMap.Name = "b-config"
			}), configMap("graft-system", "b-config", map[string]string{"config.yaml": "defaultProfile: b-only\nprofiles:\n  b-only:\n    templates: [otel-agent]\n"})),
			source:  "ConfigMap graft-system/b-config key config.yaml with the templates of ConfigMap graft-system/graft-templates, mounted by Deployment graft-system/graft-b",
			profile: "b-only", template: "otel-agent"},
		{name: "a named one that is not there", install: Install{Deployment: "nope"}, objects: shippedObjects(t),
			err: `graft's Deployment graft-system/nope: deployments.apps "nope" not found`},
		{name: "no --config: built-in profiles, mounted templates",
			objects: []runtime.Object{edit(t, "graft-system", "graft", func(d *appsv1.Deployment) {
				c := &d.Spec.Template.Spec.Containers[0]
				c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--config") })
			}), configMap("graft-system", "graft-templates", tmpl)},
			source:  "built-in with the templates of ConfigMap graft-system/graft-templates, as Deployment graft-system/graft runs graft serve without --config",
			profile: "enabled", template: "mesh-proxy"},
		{name: "command, flag values apart, items and a subPath mount",
			objects: []runtime.Object{edit(t, "graft-system", "graft", func(d *appsv1.Deployment) {
				s := &d.Spec.Template.Spec
				s.Containers[0].Command = []string{"/graft", "serve"}
				s.Containers[0].Args = []string{"--config", "/etc/graft.yaml", "--templates-dir", "/t"}
				s.Containers[0].VolumeMounts = []corev1.VolumeMount{
					{Name: "config", MountPath: "/etc/graft.yaml", SubPath: "conf/graft.yaml"},
					{Name: "templates", MountPath: "/t", SubPath: "team"},
				}
				s.Volumes[0].ConfigMap.Items = []corev1.KeyToPath{{Key: "main", Path: "conf/graft.yaml"}}
				s.Volumes[1].ConfigMap.Items = []corev1.KeyToPath{{Key: "team", Path: "team/team-agent.yaml"}, {Key: "other", Path: "other/x.yaml"}}
			}), configMap("graft-system", "graft-config", map[string]string{"main": teamConfig(t), "config.yaml": "not: this"}),
				configMap("graft-system", "graft-templates", map[string]string{"team": teamTemplate, "other": "not a template"})},
			source: "ConfigMap graft-system/graft-config key main with", profile: "team-agent", template: "team-agent"},
		{name: "a config on an emptyDir",
			objects: []runtime.Object{edit(t, "graft-system", "graft", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Volumes[0] = corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
			}), configMap("graft-system", "graft-templates", tmpl)},
			err: "Deployment graft-system/graft: --config /etc/graft/config/config.yaml: /etc/graft/config/config.yaml: not mounted from a ConfigMap (volume config)"},
		{name: "the key is missing", objects: []runtime.Object{shippedDeployment(t),
			configMap("graft-system", "graft-config", map[string]string{"graft.yaml": "{}"}), configMap("graft-system", "graft-templates", tmpl)},
			err: "ConfigMap graft-system/graft-config has no key for /etc/graft/config/config.yaml"},
		{name: "the ConfigMap is missing", objects: []runtime.Object{shippedDeployment(t), configMap("graft-system", "graft-templates", tmpl)},
			err: `ConfigMap graft-system/graft-config: configmaps "graft-config" not found`},
		{name: "a bad config names the ConfigMap and line", objects: []runtime.Object{shippedDeployment(t),
			configMap("graft-system", "graft-config", map[string]string{"config.yaml": "profiles:\n  a:\n    templatez: [agent]\n"}), configMap("graft-system", "graft-templates", tmpl)},
			err: `ConfigMap graft-system/graft-config key config.yaml:3: profiles.a: unknown field "templatez"`},
		{name: "a bad template names the ConfigMap", objects: []runtime.Object{shippedDeployment(t),
			configMap("graft-system", "graft-config", team), configMap("graft-system", "graft-templates", map[string]string{"team-agent.yaml": "name: other\n"})},
			err: "templates ConfigMap graft-system/graft-templates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := &Cluster{client: fake.NewClientset(tt.objects...), namespace: "default"}
			gc, err := cl.GraftConfig(t.Context(), tt.install)
			var engineErr error
			if err == nil {
				_, engineErr = offline.NewEngineFrom(gc.File, gc.TemplatesDir, gc.Templates, tt.profile, "")
			}
			if tt.err != "" {
				got := errors.Join(err, engineErr)
				if got == nil || !strings.Contains(got.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", got, tt.err)
				}
				return
			}
			if err != nil || engineErr != nil {
				t.Fatal(err, engineErr)
			}
			if !strings.HasPrefix(gc.Source, tt.source) {
				t.Errorf("source %q, want it to start %q", gc.Source, tt.source)
			}
			p, ok := gc.File.Profiles[tt.profile]
			if !ok {
				t.Fatalf("no profile %q", tt.profile)
			}
			if tt.template != "" && !slices.Contains(p.Templates, tt.template) {
				t.Errorf("profile %s has templates %v, want %s", tt.profile, p.Templates, tt.template)
			}
		})
	}
}

// A namespace labelled with a profile only the cluster's ConfigMap has:
// audit judges its Pod by that profile (missing: graft never saw it),
// where the built-in configuration knows no such profile.
func TestAuditUsesClusterConfig(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{names.Inject: "team-agent"},
		CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", CreationTimestamp: metav1.NewTime(time.Now())},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}}
	cl := &Cluster{client: fake.NewClientset(append(shippedObjects(t), ns, pod)...), namespace: "team"}
	gc, err := cl.GraftConfig(t.Context(), Install{})
	if err != nil {
		t.Fatal(err)
	}
	fromCluster, err := offline.NewEngineFrom(gc.File, gc.TemplatesDir, gc.Templates, "", "")
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := offline.NewEngine("", "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		engine audit.Engine
		detail string
	}{
		{"the cluster's", fromCluster, ""},
		{"built-in", builtin, "which names no profile"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := &collect{}
			if _, err := cl.Audit(t.Context(), audit.New(tt.engine), "team", 10, rep, time.Now()); err != nil {
				t.Fatal(err)
			}
			if len(rep.pods) != 1 {
				t.Fatalf("%d Pods audited, want 1", len(rep.pods))
			}
			v := rep.pods[0].Verdict
			if v.Class != audit.Missing || !strings.Contains(v.Detail, tt.detail) {
				t.Errorf("audit: %s/%s %q; want missing with %q", v.Class, v.Cause, v.Detail, tt.detail)
			}
			if tt.detail == "" && strings.Contains(v.Detail, "names no profile") {
				t.Errorf("the cluster's profile is unknown: %q", v.Detail)
			}
		})
	}
}

// A Pod being deleted is left out of the audit (and so of rollout's
// plan): its replacement is what the namespace runs next.
func TestAuditLeavesOutPodsBeingDeleted(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{names.Inject: "enabled"},
		CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))}}
	pod := func(name string, deleted bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, CreationTimestamp: metav1.NewTime(time.Now())},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}}
		if deleted {
			now := metav1.Now()
			p.DeletionTimestamp, p.Finalizers = &now, []string{"example.com/hold"}
		}
		return p
	}
	cl := &Cluster{client: fake.NewClientset(ns, pod("web-old", true), pod("web-new", false)), namespace: "shop"}
	engine, err := offline.NewEngine("", "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	rep := &collect{}
	if _, err := cl.Audit(t.Context(), audit.New(engine), "shop", 10, rep, time.Now()); err != nil {
		t.Fatal(err)
	}
	if len(rep.pods) != 1 || rep.pods[0].Name != "web-new" {
		t.Fatalf("audited %+v, want web-new alone", rep.pods)
	}
	if c := rep.pods[0].Verdict.Class; c != audit.Missing {
		t.Errorf("web-new is %s, want missing (no record): the test would pass for the wrong reason", c)
	}
}

// collect keeps what Audit writes.
type collect struct{ pods []audit.PodResult }

func (c *collect) Pod(p *audit.PodResult) error { c.pods = append(c.pods, *p); return nil }
func (c *collect) Close(*audit.Report) error    { return nil }
