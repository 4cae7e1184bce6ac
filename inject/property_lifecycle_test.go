package inject

import (
	"encoding/json"
	"k8s.io/apimachinery/pkg/api/resource"
	"reflect"
	"strconv"
	"testing"

	"github.com/graftdev/graft/internal/names"
)

// Lifecycle properties, checked on every generated Pod graft injected
// (TestProperties): uninjecting gives back the Pod graft was sent, and a
// Pod whose status records an older digest, or version 1, is upgraded in
// one call, to the Pod a fresh injection gives, and then left alone.

// checkUninject: Uninject(inject(pod)) is pod. Lists and maps that end
// up empty are compared as absent (Kubernetes reads absent, null and
// empty alike, and Uninject removes the ones it empties); a status value
// the Pod carried that graft could not read is the one thing graft
// replaced for good.
func checkUninject(t *testing.T, orig, patched []byte) {
	t.Helper()
	u, err := Uninject(patched)
	if err != nil {
		t.Fatalf("uninject: %v", err)
	}
	if again := applyTestPatch(t, patched, u.Patch); !reflect.DeepEqual(decodeGeneric(t, again), decodeGeneric(t, u.Pod)) {
		t.Fatalf("uninject's patch does not give its Pod:\n%s\n%s", again, u.Pod)
	}
	want := decodeGeneric(t, orig)
	if ann, ok := want["metadata"].(map[string]any)["annotations"].(map[string]any); ok {
		if v, ok := ann[names.Status].(string); ok {
			if _, err := ParseStatus(v); err != nil {
				delete(ann, names.Status)
			}
		}
	}
	got := decodeGeneric(t, u.Pod)
	dropEmpty(want)
	dropEmpty(got)
	// Uninject takes back what graft added to the pod-level figures and
	// writes them in one spelling ("1e3" may come back as "1k").
	canonicalFigures(want)
	canonicalFigures(got)
	if !reflect.DeepEqual(want, got) {
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		t.Fatalf("uninject(inject(pod)) is not pod:\nwant %s\ngot  %s\npatch %s", wb, gb, u.Patch)
	}
}

// checkUpgrades rewrites the injected Pod as an older graft would have
// left it, and checks graft upgrades it in one call to the Pod it injects
// now, then patches nothing.
func checkUpgrades(t *testing.T, e *Engine, o Options, orig, patched []byte) {
	t.Helper()
	pod := decodeGeneric(t, patched)
	ann := pod["metadata"].(map[string]any)["annotations"].(map[string]any)
	st, err := ParseStatus(ann[names.Status].(string))
	if err != nil {
		t.Fatalf("graft wrote a status it cannot read: %v", err)
	}
	agent := st.Template("agent")
	if agent == nil {
		return // left out for a conflict: nothing to upgrade
	}

	// An older digest, and the older image it injected.
	old := decodeGeneric(t, patched)
	agent.Digest = "0000000000000000"
	old["metadata"].(map[string]any)["annotations"].(map[string]any)[names.Status] = st.Value()
	if c := findNamed(old["spec"].(map[string]any)["initContainers"], "graft-agent"); c != nil {
		c["image"] = "ghcr.io/graftdev/agent:0.9.0"
	}
	upgraded := admitGeneric(t, e, o, old)
	if !reflect.DeepEqual(upgraded, decodeGeneric(t, patched)) {
		ub, _ := json.Marshal(upgraded)
		t.Fatalf("upgrade from an older digest does not give the injected Pod:\nwant %s\ngot  %s", patched, ub)
	}
	requireNoPatch(t, e, o, upgraded, "after an upgrade from an older digest")

	// Version 1 named the containers and volumes, not what graft added to
	// the app containers, which therefore stay as they are.
	v1 := decodeGeneric(t, patched)
	agent = st.Template("agent")
	legacy, _ := json.Marshal(map[string]any{"templates": []string{"agent"},
		"initContainers": agent.InitContainers, "containers": agent.Containers, "volumes": agent.Volumes})
	v1["metadata"].(map[string]any)["annotations"].(map[string]any)[names.Status] = string(legacy)
	// A graft that wrote version 1 added nothing to pod-level resources:
	// the upgrade adds its containers' figures.
	if res, ok := decodeGeneric(t, orig)["spec"].(map[string]any)["resources"]; ok {
		v1["spec"].(map[string]any)["resources"] = res
	}
	fromV1 := admitGeneric(t, e, o, v1)
	want := decodeGeneric(t, patched)
	for _, p := range []map[string]any{fromV1, want} {
		delete(p["metadata"].(map[string]any)["annotations"].(map[string]any), names.Status)
	}
	if !reflect.DeepEqual(fromV1, want) {
		ub, _ := json.Marshal(fromV1)
		t.Fatalf("upgrade from version 1 does not give the injected Pod:\nwant %s\ngot  %s", patched, ub)
	}
	requireNoPatch(t, e, o, admitGeneric(t, e, o, v1), "after an upgrade from version 1")
}

// admitGeneric admits pod and returns the patched Pod.
func admitGeneric(t testing.TB, e *Engine, o Options, pod map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	rv := podReview(json.RawMessage(b), "lifecycle")
	return decodeGeneric(t, applyResponse(t, rv, mustAdmit(t, e, rv, o)))
}

func requireNoPatch(t *testing.T, e *Engine, o Options, pod map[string]any, when string) {
	t.Helper()
	b, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	if p := responsePatch(t, mustAdmit(t, e, podReview(json.RawMessage(b), "again"), o)); p != nil {
		t.Fatalf("%s, graft patches again: %s", when, p)
	}
}

// dropEmpty removes, recursively, every null, empty list and empty map
// member of objects.
func dropEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		for k, e := range x {
			if dropEmpty(e) {
				delete(x, k)
			}
		}
		return len(x) == 0
	case []any:
		for _, e := range x {
			dropEmpty(e)
		}
		return len(x) == 0
	}
	return false
}

func applyTestPatch(t *testing.T, obj, patch []byte) []byte {
	t.Helper()
	out, err := applyPatch(obj, patch)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// canonicalFigures writes a generic Pod's pod-level quantities canonically.
func canonicalFigures(pod map[string]any) {
	res, _ := pod["spec"].(map[string]any)["resources"].(map[string]any)
	for _, side := range []string{"requests", "limits"} {
		m, _ := res[side].(map[string]any)
		for k, v := range m {
			if s, ok := v.(string); ok {
				if q, err := resource.ParseQuantity(s); err == nil {
					m[k] = strconv.FormatInt(q.MilliValue(), 10) // one spelling per value: 1e3, 1k and 1000 alike
				}
			}
		}
	}
}
