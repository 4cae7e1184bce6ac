package templates_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// TestDefaultConfigCoversCatalogue ties the default profiles to the
// built-in templates: every template has a profile of its own name, and
// every profile names only templates that exist.
func TestDefaultConfigCoversCatalogue(t *testing.T) {
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cfg := inject.DefaultConfig()
	for _, name := range set.Names() {
		p, ok := cfg.Profiles[name]
		if !ok || !slices.Equal(p.Templates, []string{name}) {
			t.Errorf("template %s has no profile injecting just it", name)
		}
	}
	if got := cfg.Profiles["enabled"].Templates; !slices.Equal(got, []string{"mesh-proxy"}) {
		t.Errorf("profile enabled injects %v, want [mesh-proxy]", got)
	}
	for pname, p := range cfg.Profiles {
		for _, name := range slices.Concat(p.Templates, p.AllowedTemplates) {
			if _, ok := set.Get(name); !ok {
				t.Errorf("profile %s names unknown template %s", pname, name)
			}
		}
		if len(p.AllowedTemplates) > 0 {
			for _, name := range p.Templates {
				if !slices.Contains(p.AllowedTemplates, name) {
					t.Errorf("profile %s injects %s but does not allow it", pname, name)
				}
			}
		}
	}
	if _, err := inject.New(cfg, set); err != nil {
		t.Fatalf("the engine refuses the default config: %v", err)
	}
}

// admitPod runs pod through the real engine under profile and returns the
// response and, when there is a patch, the patched Pod, decoded strictly.
func admitPod(t *testing.T, e *inject.Engine, profile string, podJSON []byte) (*admissionv1.AdmissionResponse, []byte, *corev1.Pod) {
	t.Helper()
	review, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "00000000-0000-0000-0000-000000000001",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: "shop",
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: podJSON},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := e.Admit(nil, review, inject.Options{Profile: profile})
	if err != nil {
		t.Fatalf("admit: %v", err)
	}
	var resp admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &resp); err != nil || resp.Response == nil {
		t.Fatalf("response %s: %v", out, err)
	}
	if len(resp.Response.Patch) == 0 {
		return resp.Response, podJSON, nil
	}
	patch, err := jsonpatch.DecodePatch(resp.Response.Patch)
	if err != nil {
		t.Fatalf("patch %s: %v", resp.Response.Patch, err)
	}
	patched, err := patch.Apply(podJSON)
	if err != nil {
		t.Fatalf("apply %s: %v", resp.Response.Patch, err)
	}
	dec := json.NewDecoder(bytes.NewReader(patched))
	dec.DisallowUnknownFields()
	var pod corev1.Pod
	if err := dec.Decode(&pod); err != nil {
		t.Fatalf("patched Pod does not decode: %v\n%s", err, patched)
	}
	return resp.Response, patched, &pod
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func envOf(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// TestCatalogueThroughEngine injects every default profile, and Pod-chosen
// templates and parameters, into a Pod with an ordinary init container and
// two app containers, one of which sets OTEL_SERVICE_NAME itself. The patch
// must apply and decode, put each sidecar where its template says, leave the
// user's values alone, and be the last: admitting the result changes nothing.
func TestCatalogueThroughEngine(t *testing.T) {
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cfg := inject.DefaultConfig()
	// The iptables init container needs Pod Security privileged: a
	// profile must allow it.
	cfg.Profiles["mesh-proxy-iptables"] = inject.Profile{Templates: []string{"mesh-proxy"},
		PodSecurity: inject.PodSecurity{MaxLevel: templates.LevelPrivileged}}
	e, err := inject.New(cfg, set)
	if err != nil {
		t.Fatal(err)
	}
	base := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop",
			Labels: map[string]string{"app.kubernetes.io/name": "web"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "migrate", Image: "migrate:1"}},
			Containers: []corev1.Container{
				{Name: "app", Image: "app:1", Env: []corev1.EnvVar{{Name: "OTEL_SERVICE_NAME", Value: "mine"}}},
				{Name: "worker", Image: "worker:1"},
			},
		},
	}
	tests := []struct {
		profile     string
		annotations map[string]string
		inits       []string // spec.initContainers names after injection
		deny        string   // deny message prefix, when denied
		check       func(t *testing.T, p *corev1.Pod)
	}{
		{profile: "enabled", inits: []string{"graft-proxy", "migrate"}, check: func(t *testing.T, p *corev1.Pod) {
			if p.Annotations["redirect.graft.dev/mode"] != "cni" {
				t.Errorf("annotations %v lack redirect.graft.dev/mode=cni", p.Annotations)
			}
			if p.Spec.InitContainers[0].StartupProbe == nil {
				t.Error("the proxy has no startup probe: app containers would not wait for it")
			}
		}},
		{profile: "mesh-proxy", inits: []string{"graft-proxy", "migrate"}},
		{profile: "log-shipper", inits: []string{"graft-log-shipper", "migrate"}, check: func(t *testing.T, p *corev1.Pod) {
			for _, c := range p.Spec.Containers {
				if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/var/log/app" || c.VolumeMounts[0].ReadOnly {
					t.Errorf("container %s mounts %+v, want graft-logs read-write at /var/log/app", c.Name, c.VolumeMounts)
				}
			}
		}},
		{profile: "otel-agent", inits: []string{"graft-otel-agent", "migrate"}, check: func(t *testing.T, p *corev1.Pod) {
			if v := envOf(p.Spec.Containers[0], "OTEL_SERVICE_NAME"); v == nil || v.Value != "mine" || v.ValueFrom != nil {
				t.Errorf("app's own OTEL_SERVICE_NAME was changed: %+v", v)
			}
			v := envOf(p.Spec.Containers[1], "OTEL_SERVICE_NAME")
			if v == nil || v.ValueFrom == nil || v.ValueFrom.FieldRef.FieldPath != "metadata.labels['app.kubernetes.io/name']" {
				t.Errorf("worker's OTEL_SERVICE_NAME = %+v, want the Downward API label", v)
			}
			for _, c := range p.Spec.Containers {
				if envOf(c, "OTEL_EXPORTER_OTLP_ENDPOINT") == nil || envOf(c, "OTEL_RESOURCE_ATTRIBUTES") == nil {
					t.Errorf("container %s lacks the OTLP endpoint or resource attributes", c.Name)
				}
				// $(VAR) expands only variables defined earlier in the list.
				names := make([]string, len(c.Env))
				for i, e := range c.Env {
					names[i] = e.Name
				}
				if slices.Index(names, "GRAFT_OTEL_POD_NAME") > slices.Index(names, "OTEL_RESOURCE_ATTRIBUTES") {
					t.Errorf("container %s defines GRAFT_OTEL_POD_NAME after OTEL_RESOURCE_ATTRIBUTES uses it: %v", c.Name, names)
				}
			}
		}},
		{profile: "secrets-agent", inits: []string{"graft-secrets-init", "graft-secrets-agent", "migrate"}, check: func(t *testing.T, p *corev1.Pod) {
			for _, c := range p.Spec.Containers {
				if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != "graft-secrets" || !c.VolumeMounts[0].ReadOnly {
					t.Errorf("container %s mounts %+v, want graft-secrets read-only", c.Name, c.VolumeMounts)
				}
			}
			for _, v := range p.Spec.Volumes {
				if v.Name == "graft-secrets" && (v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory) {
					t.Errorf("graft-secrets is %+v, want an in-memory emptyDir", v.VolumeSource)
				}
			}
		}},
		{profile: "otel-agent-log-shipper", inits: []string{"graft-otel-agent", "graft-log-shipper", "migrate"}},
		{profile: "mesh-proxy-secrets-agent", inits: []string{"graft-proxy", "graft-secrets-init", "graft-secrets-agent", "migrate"}},
		{
			profile:     "enabled",
			annotations: map[string]string{"graft.dev/templates": "mesh-proxy,otel-agent,log-shipper,secrets-agent"},
			inits:       []string{"graft-proxy", "graft-otel-agent", "graft-log-shipper", "graft-secrets-init", "graft-secrets-agent", "migrate"},
			check: func(t *testing.T, p *corev1.Pod) {
				if n := len(p.Spec.Volumes); n != 4 {
					t.Errorf("%d volumes, want 4", n)
				}
			},
		},
		{
			profile:     "mesh-proxy",
			annotations: map[string]string{"graft.dev/mesh-proxy.trafficRedirect": "init-container"},
			// The built-in profiles lock what decides interception.
			deny: `annotation graft.dev/mesh-proxy.trafficRedirect="init-container": parameter trafficRedirect of template mesh-proxy is locked by profile "mesh-proxy"`,
		},
		{
			profile:     "mesh-proxy-iptables",
			annotations: map[string]string{"graft.dev/mesh-proxy.trafficRedirect": "init-container"},
			inits:       []string{"graft-proxy-init", "graft-proxy", "migrate"},
			check: func(t *testing.T, p *corev1.Pod) {
				c := p.Spec.InitContainers[0]
				if c.RestartPolicy != nil || c.SecurityContext == nil || c.SecurityContext.Capabilities == nil ||
					!slices.Equal(c.SecurityContext.Capabilities.Add, []corev1.Capability{"NET_ADMIN"}) {
					t.Errorf("redirect init container %+v, want an ordinary init container with NET_ADMIN alone", c)
				}
			},
		},
		{
			profile: "mesh-proxy",
			annotations: map[string]string{
				"graft.dev/mesh-proxy.concurrency":                     "4",
				"graft.dev/mesh-proxy.holdApplicationUntilProxyStarts": "false",
				"graft.dev/mesh-proxy.cpuLimit":                        "500m",
			},
			inits: []string{"graft-proxy", "migrate"},
			check: func(t *testing.T, p *corev1.Pod) {
				c := p.Spec.InitContainers[0]
				if !slices.Contains(c.Args, "4") || c.StartupProbe != nil || c.Resources.Limits.Cpu().String() != "500m" {
					t.Errorf("overrides not applied: args %v, startupProbe %v, limits %v", c.Args, c.StartupProbe, c.Resources.Limits)
				}
			},
		},
		{
			profile: "secrets-agent",
			annotations: map[string]string{
				"graft.dev/secrets-agent.secretPaths":    "kv/data/web/db,kv/data/web/api",
				"graft.dev/secrets-agent.templateFormat": "env",
			},
			inits: []string{"graft-secrets-init", "graft-secrets-agent", "migrate"},
			check: func(t *testing.T, p *corev1.Pod) {
				probe := strings.Join(p.Spec.InitContainers[1].StartupProbe.Exec.Command, " ")
				if want := "test -f /var/run/graft-secrets/kv/data/web/db.env && test -f /var/run/graft-secrets/kv/data/web/api.env"; !strings.Contains(probe, want) {
					t.Errorf("startup probe %q does not wait for %q", probe, want)
				}
				cfg := envOf(p.Spec.InitContainers[1], "GRAFT_VAULT_CONFIG").Value
				var parsed struct {
					Template []struct{ Destination, Contents string }
				}
				if err := json.Unmarshal([]byte(cfg), &parsed); err != nil || len(parsed.Template) != 2 {
					t.Fatalf("agent config is not the JSON expected (%v):\n%s", err, cfg)
				}
				if !strings.Contains(parsed.Template[1].Contents, `secret "kv/data/web/api"`) {
					t.Errorf("template contents %q", parsed.Template[1].Contents)
				}
			},
		},
		{
			profile:     "otel-agent",
			annotations: map[string]string{"graft.dev/otel-agent.serviceNameFrom": "podName", "graft.dev/otel-agent.samplingRatio": "0.25"},
			inits:       []string{"graft-otel-agent", "migrate"},
			check: func(t *testing.T, p *corev1.Pod) {
				w := p.Spec.Containers[1]
				if v := envOf(w, "OTEL_SERVICE_NAME"); v.ValueFrom.FieldRef.FieldPath != "metadata.name" {
					t.Errorf("OTEL_SERVICE_NAME from %s", v.ValueFrom.FieldRef.FieldPath)
				}
				if v := envOf(w, "OTEL_TRACES_SAMPLER_ARG"); v.Value != "0.25" {
					t.Errorf("OTEL_TRACES_SAMPLER_ARG = %q", v.Value)
				}
			},
		},
		{
			profile:     "mesh-proxy",
			annotations: map[string]string{"graft.dev/mesh-proxy.concurrency": "99"},
			deny:        `annotation graft.dev/mesh-proxy.concurrency="99": must be at most 16`,
		},
	}
	for _, tc := range tests {
		name := tc.profile
		if len(tc.annotations) > 0 {
			name += fmt.Sprint(tc.annotations)
		}
		t.Run(name, func(t *testing.T) {
			pod := base.DeepCopy()
			pod.Annotations = tc.annotations
			podJSON, err := json.Marshal(pod)
			if err != nil {
				t.Fatal(err)
			}
			resp, patched, got := admitPod(t, e, tc.profile, podJSON)
			if tc.deny != "" {
				if resp.Allowed || resp.Result == nil || !strings.HasPrefix(resp.Result.Message, tc.deny) {
					t.Fatalf("allowed=%v result=%+v, want denied with %q", resp.Allowed, resp.Result, tc.deny)
				}
				return
			}
			if !resp.Allowed || got == nil {
				t.Fatalf("allowed=%v, patch %q, warnings %v", resp.Allowed, resp.Patch, resp.Warnings)
			}
			if len(resp.Warnings) > 0 {
				t.Errorf("warnings: %v", resp.Warnings)
			}
			if names := containerNames(got.Spec.InitContainers); !slices.Equal(names, tc.inits) {
				t.Errorf("initContainers %v, want %v", names, tc.inits)
			}
			if names := containerNames(got.Spec.Containers); !slices.Equal(names, []string{"app", "worker"}) {
				t.Errorf("containers %v, want the app's own", names)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
			again, _, _ := admitPod(t, e, tc.profile, patched)
			if len(again.Patch) > 0 {
				t.Errorf("admitting the injected Pod again patches it: %s", again.Patch)
			}
		})
	}
}
