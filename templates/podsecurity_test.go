package templates

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"
)

// TestBuiltinTemplatesMeetRestricted runs the API server's Pod Security
// checks (k8s.io/pod-security-admission, as a library) on a restricted
// Pod holding each built-in template's render, with its defaults and with
// every parameter at each of its bounds and values: the Pod stays
// restricted unless the value declares a level, and then it meets exactly
// that level. The app container sets its seccomp profile itself, not at
// Pod level, as the Pod did, so nothing of graft's leans on the
// Pod's settings.
func TestBuiltinTemplatesMeetRestricted(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	allowed := func(spec *corev1.PodSpec, l Level) (bool, string) {
		res := policy.AggregateCheckResults(ev.EvaluatePod(
			psaapi.LevelVersion{Level: psaapi.Level(l), Version: psaapi.LatestVersion()}, &metav1.ObjectMeta{}, spec))
		return res.Allowed, res.ForbiddenReason()
	}
	for _, name := range s.Names() {
		tmpl, _ := s.Get(name)
		if tmpl.PodSecurity != LevelRestricted {
			t.Errorf("%s: podSecurity %s, want restricted", name, tmpl.PodSecurity)
		}
		for _, c := range lintCases(tmpl) {
			f, err := tmpl.Render(c.overrides)
			if err != nil {
				t.Fatalf("%s %s: %v", name, c.label, err)
			}
			spec := restrictedAppPod()
			addFragment(t, &spec, f)
			need := tmpl.NeedsLevel(c.overrides).Level
			for _, l := range Levels() {
				ok, why := allowed(&spec, l)
				if want := l.Allows(need); ok != want {
					t.Errorf("%s %s: admitted at %s: %v (%s), want %v (declares %s)", name, c.label, l, ok, why, want, need)
				}
			}
		}
	}
}

// restrictedAppPod is a Pod spec whose own container meets restricted,
// setting everything per container.
func restrictedAppPod() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "example.com/app:1",
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			RunAsNonRoot:             ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}}}
}

// addFragment adds f's containers, init containers and volumes to spec.
func addFragment(t *testing.T, spec *corev1.PodSpec, f *Fragment) {
	t.Helper()
	for _, el := range f.InitContainers {
		var c corev1.Container
		if err := json.Unmarshal(el.Raw, &c); err != nil {
			t.Fatal(err)
		}
		spec.InitContainers = append(spec.InitContainers, c)
	}
	for _, el := range f.Containers {
		var c corev1.Container
		if err := json.Unmarshal(el.Raw, &c); err != nil {
			t.Fatal(err)
		}
		spec.Containers = append(spec.Containers, c)
	}
	for _, el := range f.Volumes {
		var v corev1.Volume
		if err := json.Unmarshal(el.Raw, &v); err != nil {
			t.Fatal(err)
		}
		spec.Volumes = append(spec.Volumes, v)
	}
}

func TestNeedsLevelNamesTheParameter(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	mp, _ := s.Get("mesh-proxy")
	tests := []struct {
		overrides map[string]string
		want      LevelNeed
	}{
		{nil, LevelNeed{Level: LevelRestricted}},
		{map[string]string{"trafficRedirect": "none"}, LevelNeed{Level: LevelRestricted}},
		{map[string]string{"trafficRedirect": "init-container"}, LevelNeed{Level: LevelPrivileged, Param: "trafficRedirect", Value: "init-container"}},
	}
	for _, tt := range tests {
		if got := mp.NeedsLevel(tt.overrides); got != tt.want {
			t.Errorf("NeedsLevel(%v) = %+v, want %+v", tt.overrides, got, tt.want)
		}
	}
}

func TestLevels(t *testing.T) {
	for _, tt := range []struct {
		ns, need Level
		want     bool
	}{
		{LevelRestricted, LevelRestricted, true},
		{LevelRestricted, LevelBaseline, false},
		{LevelBaseline, LevelRestricted, true},
		{LevelBaseline, LevelPrivileged, false},
		{LevelPrivileged, LevelPrivileged, true},
		{"", LevelPrivileged, true}, // unknown: nothing is checked
	} {
		if got := tt.ns.Allows(tt.need); got != tt.want {
			t.Errorf("%q.Allows(%q) = %v", tt.ns, tt.need, got)
		}
	}
	if _, err := ParseLevel("Restricted"); err == nil {
		t.Error("ParseLevel accepts a capitalised level")
	}
}
