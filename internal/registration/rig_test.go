package registration

import (
	"encoding/json"
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/vapeval"
)

// rig is a configuration's engines and compiled guarantees.
type rig struct {
	revs     *inject.Revisions
	policies map[string]*vapeval.Policy
}

func newRig(t *testing.T, data string) *rig {
	t.Helper()
	f := parse(t, data)
	rc, err := f.RevisionsConfig("")
	if err != nil {
		t.Fatal(err)
	}
	revs, err := inject.NewRevisions(rc)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := Guarantees(rc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{revs: revs, policies: map[string]*vapeval.Policy{}}
	for _, g := range gs {
		if r.policies[g.Profile], err = vapeval.Compile(g.Policy); err != nil {
			t.Fatalf("%s: %v", g.Policy.Name, err)
		}
	}
	return r
}

// admit runs pod through graft's engine for profile and revision and
// returns the Pod the API server would store.
func (r *rig) admit(t *testing.T, pod *corev1.Pod, profile, rev string) *corev1.Pod {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
		`"namespace":"apps","operation":"CREATE","object":` + string(raw) + `}}`
	resp, res, err := r.revs.Admit(nil, []byte(review), inject.Options{Profile: profile, Revision: rev})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision == inject.DecisionDeny {
		t.Fatalf("graft refuses the Pod: %v", res.Reason)
	}
	var out struct {
		Response struct{ Patch []byte } `json:"response"`
	}
	if err := json.Unmarshal(resp, &out); err != nil {
		t.Fatal(err)
	}
	if out.Response.Patch != nil {
		patch, err := jsonpatch.DecodePatch(out.Response.Patch)
		if err != nil {
			t.Fatal(err)
		}
		if raw, err = patch.Apply(raw); err != nil {
			t.Fatal(err)
		}
	}
	var p corev1.Pod
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// check runs profile's guarantee on pod in a namespace labelled for it
// (and graft.dev/rev=rev, if set).
func (r *rig) check(t *testing.T, pod *corev1.Pod, profile, rev string) vapeval.Verdict {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	ns := map[string]string{names.Inject: profile}
	if rev != "" {
		ns[names.Revision] = rev
	}
	v, err := r.policies[profile].Evaluate(obj, "apps", ns)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Selected {
		t.Fatalf("the guarantee of profile %s does not select its namespace", profile)
	}
	return v
}

func appPod() *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	p.Name = "p"
	return p
}

// without returns pod without the containers called name.
func without(pod *corev1.Pod, name string) *corev1.Pod {
	p := pod.DeepCopy()
	drop := func(c corev1.Container) bool { return c.Name == name }
	p.Spec.InitContainers = slices.DeleteFunc(p.Spec.InitContainers, drop)
	p.Spec.Containers = slices.DeleteFunc(p.Spec.Containers, drop)
	return p
}

// edit returns pod with f applied to its container called name.
func edit(pod *corev1.Pod, name string, f func(*corev1.Container)) *corev1.Pod {
	p := pod.DeepCopy()
	for _, l := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range l {
			if l[i].Name == name {
				f(&l[i])
			}
		}
	}
	return p
}

