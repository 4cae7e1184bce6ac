package inject

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// Property-test Pods that the API server must keep valid and compliant
// after graft (issue 21): strict security contexts, other operating
// systems, pod-level resources.

// strictenPod gives some Pods a security context that meets Pod Security
// restricted, at Pod level, per container, or split between the two, and
// some an operating system: Windows (by spec.os.name or node selector,
// skipped), or Linux said out loud.
func strictenPod(r *rand.Rand, pod map[string]any) {
	spec := pod["spec"].(map[string]any)
	switch r.IntN(12) {
	case 0:
		spec["os"] = map[string]any{"name": "windows"}
		return
	case 1:
		spec["nodeSelector"] = map[string]any{"kubernetes.io/os": "windows"}
		return
	case 2:
		spec["os"] = map[string]any{"name": "linux"}
	}
	if r.IntN(3) != 0 {
		return
	}
	podLevel := r.IntN(2) == 0
	if podLevel {
		spec["securityContext"] = map[string]any{"runAsNonRoot": true, "runAsUser": int64(1000 + r.IntN(5)),
			"seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	}
	for _, key := range []string{"initContainers", "containers"} {
		l, _ := spec[key].([]any)
		for _, c := range l {
			sc := map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}}
			if !podLevel {
				sc["runAsNonRoot"] = true
				sc["seccompProfile"] = map[string]any{"type": "RuntimeDefault"}
			}
			c.(map[string]any)["securityContext"] = sc
		}
	}
}

// targetsOtherOS reports whether strictenPod bound the Pod to Windows.
func targetsOtherOS(pod map[string]any) bool {
	spec := pod["spec"].(map[string]any)
	if os, ok := spec["os"].(map[string]any); ok && os["name"] == "windows" {
		return true
	}
	ns, _ := spec["nodeSelector"].(map[string]any)
	return ns["kubernetes.io/os"] == "windows"
}

// addPodLevelResources gives some Pods pod-level resources valid as the
// Pod stands (after the in-tree plugins): requests of cpu, memory or both
// at or above its containers' aggregate, sometimes exactly at it (the
// case graft used to break), limits at or above the requests.
func addPodLevelResources(r *rand.Rand, pod map[string]any) {
	if r.IntN(3) != 0 {
		return
	}
	b, _ := json.Marshal(pod)
	var typed corev1.Pod
	if json.Unmarshal(b, &typed) != nil {
		return
	}
	aggr := resourcehelper.AggregateContainerRequests(&typed, resourcehelper.PodResourcesOptions{})
	res := map[string]any{}
	req, lim := map[string]any{}, map[string]any{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if r.IntN(3) == 0 {
			continue
		}
		q := aggr[name].DeepCopy()
		if r.IntN(2) == 0 {
			q.Add(resource.MustParse(map[corev1.ResourceName]string{corev1.ResourceCPU: "150m", corev1.ResourceMemory: "100Mi"}[name]))
		}
		if q.IsZero() {
			q = resource.MustParse(map[corev1.ResourceName]string{corev1.ResourceCPU: "0.25", corev1.ResourceMemory: "1e3"}[name])
		}
		switch r.IntN(3) {
		case 0:
			req[string(name)] = q.String()
		case 1:
			l := q.DeepCopy()
			l.Add(q)
			req[string(name)], lim[string(name)] = q.String(), l.String()
		default:
			// Limits only: the API server defaults the requests to the
			// containers' aggregate before the webhooks.
			lim[string(name)] = q.String()
			a := aggr[name]
			req[string(name)] = a.String()
			if a.IsZero() {
				req[string(name)] = q.String()
			}
		}
	}
	// Container limits must stay within pod-level limits.
	for _, c := range typed.Spec.Containers {
		for name, l := range c.Resources.Limits {
			if v, ok := lim[string(name)]; ok {
				if pl := resource.MustParse(v.(string)); l.Cmp(pl) > 0 {
					lim[string(name)] = l.String()
				}
			}
		}
	}
	if len(req) > 0 {
		res["requests"] = req
	}
	if len(lim) > 0 {
		res["limits"] = lim
	}
	if len(res) > 0 {
		pod["spec"].(map[string]any)["resources"] = res
	}
}

// psaEvaluator is the API server's Pod Security checks.
func psaRestricted(t *testing.T, pod *corev1.Pod) (bool, string) {
	t.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res := policy.AggregateCheckResults(ev.EvaluatePod(
		psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &metav1.ObjectMeta{}, &pod.Spec))
	return res.Allowed, res.ForbiddenReason()
}

// checkStaysValid holds the patched Pod to what the API server requires
// of it that a library can check: pod-level resources consistent
// (kube-apiserver's rule, with its aggregation helper), and still
// restricted if it was.
func checkStaysValid(t *testing.T, before, after []byte) {
	t.Helper()
	var in, out corev1.Pod
	if err := json.Unmarshal(before, &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(after, &out); err != nil {
		t.Fatal(err)
	}
	checkPodLevelResources(t, &out)
	if ok, _ := psaRestricted(t, &in); ok {
		if ok, why := psaRestricted(t, &out); !ok {
			t.Fatalf("a restricted Pod is no longer restricted after graft: %s", why)
		}
	}
}
