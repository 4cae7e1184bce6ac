package inject

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/graftdev/graft/internal/names"
)

// checkPodLevelResources asserts what kube-apiserver's validation
// (validatePodResourceConsistency in k8s.io/kubernetes
// pkg/apis/core/validation) requires of a Pod's pod-level resources, with
// the aggregation helper it uses (k8s.io/component-helpers/resource):
// each pod-level request at least the containers' aggregate, each
// container's limit within the pod-level limit, requests within limits.
func checkPodLevelResources(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if pod.Spec.Resources == nil {
		return
	}
	aggr := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	for name, req := range aggr {
		if podReq, ok := pod.Spec.Resources.Requests[name]; ok && req.Cmp(podReq) > 0 {
			t.Errorf("spec.resources.requests[%s] %s: must be greater than or equal to aggregate container requests of %s", name, podReq.String(), req.String())
		}
	}
	for _, c := range pod.Spec.Containers {
		for name, lim := range c.Resources.Limits {
			if podLim, ok := pod.Spec.Resources.Limits[name]; ok && lim.Cmp(podLim) > 0 {
				t.Errorf("container %s: limits[%s] %s must be less than or equal to pod limits of %s", c.Name, name, lim.String(), podLim.String())
			}
		}
	}
	for name, req := range pod.Spec.Resources.Requests {
		if lim, ok := pod.Spec.Resources.Limits[name]; ok && req.Cmp(lim) > 0 {
			t.Errorf("spec.resources.requests[%s] %s exceeds its limit %s", name, req.String(), lim.String())
		}
	}
}

func TestPodLevelResources(t *testing.T) {
	cfg := goldenConfig()
	cfg.Profiles["strict"] = Profile{Templates: []string{"agent"}, PodResources: PodResourcesDeny}
	cfg.Profiles["mesh"] = Profile{Templates: []string{"mesh-proxy"}}
	e := newTestEngine(t, cfg)
	// The app's two containers request 100m cpu and 128Mi memory each,
	// and limit to 1 cpu and 256Mi (twoContainerPod's are plain: set here).
	withApp := func(res map[string]any) func(map[string]any) {
		return func(p map[string]any) {
			for _, c := range p["spec"].(map[string]any)["containers"].([]any) {
				c.(map[string]any)["resources"] = map[string]any{
					"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
					"limits":   map[string]any{"cpu": "1", "memory": "256Mi"}}
			}
			if res != nil {
				p["spec"].(map[string]any)["resources"] = res
			}
		}
	}
	tests := []struct {
		name    string
		profile string
		pod     func(map[string]any)
		// want are the pod-level figures after injection, "" when absent.
		wantReq, wantLim map[string]string
		deny             string
	}{
		{"no pod-level resources", "agent", withApp(nil), nil, nil, ""},
		{"requests equal to the containers'", "agent", withApp(map[string]any{"requests": map[string]any{"cpu": "200m", "memory": "256Mi"}}),
			map[string]string{"cpu": "250m", "memory": "320Mi"}, nil, ""},
		{"requests only, spelled oddly", "agent", withApp(map[string]any{"requests": map[string]any{"cpu": "0.25", "memory": "1Gi"}}),
			map[string]string{"cpu": "300m", "memory": "1088Mi"}, nil, ""},
		{"limits only", "agent", withApp(map[string]any{"limits": map[string]any{"cpu": "2", "memory": "512Mi"}}),
			nil, map[string]string{"cpu": "2050m", "memory": "576Mi"}, ""},
		{"both, cpu only", "agent", withApp(map[string]any{"requests": map[string]any{"cpu": "200m"}, "limits": map[string]any{"cpu": "2"}}),
			map[string]string{"cpu": "250m"}, map[string]string{"cpu": "2050m"}, ""},
		{"both, the proxy's own request and limit", "mesh", withApp(map[string]any{"requests": map[string]any{"cpu": "200m", "memory": "256Mi"},
			"limits": map[string]any{"cpu": "2", "memory": "1Gi"}}),
			map[string]string{"cpu": "300m", "memory": "384Mi"}, map[string]string{"cpu": "4", "memory": "2Gi"}, ""},
		{"denied by the profile", "strict", withApp(map[string]any{"requests": map[string]any{"cpu": "200m"}}), nil, nil,
			`graft refuses this Pod: it sets pod-level resources (spec.resources), and profile "strict" sets podResources: deny rather than add its sidecars' figures to them (template agent's containers request cpu 50m)`},
		{"the profile would deny, but there is nothing pod-level", "strict", withApp(nil), nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := twoContainerPod(tt.pod)
			review := podReview(pod, "podres")
			o := Options{Profile: tt.profile}
			resp, res, err := e.Admit(nil, review, o)
			if err != nil {
				t.Fatal(err)
			}
			if tt.deny != "" {
				if res.Decision != DecisionDeny || res.Reason != ReasonPodResources || responseMessage(t, resp) != tt.deny {
					t.Fatalf("%v (%v) %q, want denied: %q", res.Decision, res.Reason, responseMessage(t, resp), tt.deny)
				}
				return
			}
			if res.Decision != DecisionInject {
				t.Fatalf("%v (%v): %s", res.Decision, res.Reason, resp)
			}
			patched := applyResponse(t, review, resp)
			var typed corev1.Pod
			if err := json.Unmarshal(patched, &typed); err != nil {
				t.Fatal(err)
			}
			checkPodLevelResources(t, &typed)
			generic := decodeGeneric(t, patched)
			assertFigures(t, generic, "requests", tt.wantReq)
			assertFigures(t, generic, "limits", tt.wantLim)
			// Idempotent, and a reinvocation after another mutator adds a
			// container, or removes graft's sidecar, adds nothing twice.
			requireNoPatch(t, e, o, generic, "after the first admission")
			appendTo(generic, "containers", map[string]any{"name": "late", "image": "l:1"})
			again := admitGeneric(t, e, o, generic)
			assertFigures(t, again, "requests", tt.wantReq)
			requireNoPatch(t, e, o, again, "after reinvocation")
			stripped := decodeGeneric(t, patched)
			spec := stripped["spec"].(map[string]any)
			spec["initContainers"] = dropNamed(spec["initContainers"], "graft-agent", "graft-proxy")
			repaired := admitGeneric(t, e, o, stripped)
			assertFigures(t, repaired, "requests", tt.wantReq)
			assertFigures(t, repaired, "limits", tt.wantLim)
			// Uninject takes back exactly what graft added.
			b, _ := json.Marshal(generic)
			u, err := Uninject(b)
			if err != nil {
				t.Fatal(err)
			}
			if res, ok := pod["spec"].(map[string]any)["resources"]; ok {
				back := decodeGeneric(t, u.Pod)["spec"].(map[string]any)["resources"]
				if !sameQuantities(t, res, back) {
					t.Errorf("uninject leaves %v, want %v", back, res)
				}
			}
		})
	}
}

// TestPodLevelResourcesWithLimitRange: graft adds its containers' figures
// as LimitRanger leaves them: a LimitRange default for a resource a
// template does not set counts, once.
func TestPodLevelResourcesWithLimitRange(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	pod := twoContainerPod(func(p map[string]any) {
		for _, c := range p["spec"].(map[string]any)["containers"].([]any) {
			c.(map[string]any)["resources"] = map[string]any{
				"requests": map[string]any{"cpu": "100m", "memory": "128Mi", "ephemeral-storage": "1Gi"},
				"limits":   map[string]any{"ephemeral-storage": "2Gi"}}
		}
		p["metadata"].(map[string]any)["annotations"].(map[string]any)[names.LimitRangerAnnotation] =
			"LimitRanger plugin set: ephemeral-storage request for container web; ephemeral-storage limit for container web; " +
				"ephemeral-storage request for container worker; ephemeral-storage limit for container worker"
		// The classic-sidecar fixture's containers set cpu and memory;
		// pod-level figures are cpu and memory only, so the defaults
		// LimitRanger adds to them (ephemeral-storage) change nothing.
		p["spec"].(map[string]any)["resources"] = map[string]any{"requests": map[string]any{"cpu": "200m", "memory": "256Mi"}}
	})
	review := podReview(pod, "podres-lr")
	o := Options{Profile: "classic"}
	patched := decodeGeneric(t, applyResponse(t, review, mustAdmit(t, e, review, o)))
	// classic-sidecar adds an init container and a container, 10m and
	// 16Mi each.
	assertFigures(t, patched, "requests", map[string]string{"cpu": "220m", "memory": "288Mi"})
	requireNoPatch(t, e, o, patched, "after the first admission")
}

func assertFigures(t *testing.T, pod map[string]any, side string, want map[string]string) {
	t.Helper()
	res, _ := pod["spec"].(map[string]any)["resources"].(map[string]any)
	got, _ := res[side].(map[string]any)
	if len(want) == 0 {
		return
	}
	for k, v := range want {
		g, _ := got[k].(string)
		if gq, err := resource.ParseQuantity(g); err != nil || gq.Cmp(resource.MustParse(v)) != 0 {
			t.Errorf("spec.resources.%s[%s] = %q, want %s", side, k, g, v)
		}
	}
}

func sameQuantities(t *testing.T, a, b any) bool {
	t.Helper()
	am, _ := a.(map[string]any)
	bm, _ := b.(map[string]any)
	for _, side := range []string{"requests", "limits"} {
		as, _ := am[side].(map[string]any)
		bs, _ := bm[side].(map[string]any)
		if len(as) != len(bs) {
			return false
		}
		for k, v := range as {
			x, _ := v.(string)
			y, _ := bs[k].(string)
			if qx := resource.MustParse(x); qx.Cmp(resource.MustParse(y)) != 0 {
				return false
			}
		}
	}
	return true
}

func dropNamed(list any, names ...string) any {
	l, _ := list.([]any)
	var out []any
	for _, e := range l {
		n, _ := e.(map[string]any)["name"].(string)
		keep := true
		for _, x := range names {
			keep = keep && !strings.EqualFold(n, x)
		}
		if keep {
			out = append(out, e)
		}
	}
	return out
}
