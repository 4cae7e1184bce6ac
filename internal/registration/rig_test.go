package registration

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/fixture"
	"github.com/graftdev/graft/internal/guaranteecorpus"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/vapeval"
)

// rig is a configuration's engines and compiled guarantees, with their
// bindings.
type rig struct {
	revs     *inject.Revisions
	gs       []Guarantee
	policies []*vapeval.Policy
	// bare are the same policies without their matchCondition: their
	// validations alone.
	bare []*vapeval.Policy
}

// rigs holds the rigs of the configurations the tests use: compiling a
// configuration's policies takes the API server's compiler a while.
var rigs sync.Map // configuration -> *rig

func newRig(t *testing.T, data string) *rig {
	t.Helper()
	if r, ok := rigs.Load(data); ok {
		return r.(*rig)
	}
	f := parse(t, data)
	// The built-in templates and the engine's fixtures (agent, a
	// parameter of every type).
	rc, err := f.RevisionsConfig(fixture.Dir())
	if err != nil {
		t.Fatal(err)
	}
	r := newRigFor(t, rc)
	rigs.Store(data, r)
	return r
}

func newRigFor(t *testing.T, rc inject.RevisionsConfig) *rig {
	t.Helper()
	revs, err := inject.NewRevisions(rc)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := Guarantees(rc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{revs: revs, gs: gs}
	for _, g := range gs {
		for _, bare := range []bool{false, true} {
			vap := g.Policy.DeepCopy()
			if bare {
				vap.Spec.MatchConditions = nil
			}
			p, err := vapeval.Compile(vap)
			if err != nil {
				t.Fatalf("%s: %v", g.Policy.Name, err)
			}
			for _, b := range g.Bindings {
				if err := p.Bind(b); err != nil {
					t.Fatal(err)
				}
			}
			if bare {
				r.bare = append(r.bare, p)
			} else {
				r.policies = append(r.policies, p)
			}
		}
	}
	return r
}

// admit runs pod through graft's engine for profile and graft.dev/rev
// value rev, and returns the Pod as the API server stores it (with the
// ServiceAccount plugin's token mount).
func (r *rig) admit(t *testing.T, pod *corev1.Pod, profile, rev string) *corev1.Pod {
	t.Helper()
	return guaranteecorpus.Store(r.inject(t, pod, profile, rev), true)
}

// inject runs pod through graft's engine, as the webhook answers it.
func (r *rig) inject(t *testing.T, pod *corev1.Pod, profile, rev string) *corev1.Pod {
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

// check runs every guarantee on a CREATE of pod in a namespace labelled
// for profile (and graft.dev/rev=rev, if set): exactly one must select it.
func (r *rig) check(t *testing.T, pod *corev1.Pod, profile, rev string) vapeval.Verdict {
	t.Helper()
	return r.request(t, vapeval.Request{Object: pod}, profile, rev, false)
}

// update runs every guarantee on an UPDATE of old to pod.
func (r *rig) update(t *testing.T, old, pod *corev1.Pod, profile, rev string) vapeval.Verdict {
	t.Helper()
	return r.request(t, vapeval.Request{Operation: admission.Update, OldObject: old, Object: pod}, profile, rev, false)
}

// request runs every guarantee (bare: their validations alone) on req in
// a namespace labelled for profile and rev.
func (r *rig) request(t *testing.T, req vapeval.Request, profile, rev string, bare bool) vapeval.Verdict {
	t.Helper()
	ns := map[string]string{names.Inject: profile}
	if rev != "" {
		ns[names.Revision] = rev
	}
	req.Namespace = vapeval.NamespaceOf("apps", ns)
	ps := r.policies
	if bare {
		ps = r.bare
	}
	var out vapeval.Verdict
	selected := 0
	for _, p := range ps {
		v, err := p.Admit(req)
		if err != nil {
			t.Fatal(err)
		}
		if v.Selected {
			selected++
			out.Selected = true
		}
		out.Matched = out.Matched || v.Matched
		if out.Denied == "" {
			out.Denied = v.Denied
		}
	}
	if selected != 1 {
		t.Fatalf("%d guarantees select a Pod of profile %s with graft.dev/rev %q, want one", selected, profile, rev)
	}
	return out
}

func appPod() *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	p.Name = "p"
	return p
}

func withAnnotations(p *corev1.Pod, kv ...string) *corev1.Pod {
	p = p.DeepCopy()
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Annotations[kv[i]] = kv[i+1]
	}
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
func edit(pod *corev1.Pod, name string, f func(*corev1.Pod, *corev1.Container)) *corev1.Pod {
	p := pod.DeepCopy()
	found := false
	for _, l := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range l {
			if l[i].Name == name {
				f(p, &l[i])
				found = true
			}
		}
	}
	if !found {
		panic("no container " + name)
	}
	return p
}

// wantDenied fails unless v is a refusal saying every one of want.
func wantDenied(t *testing.T, what string, v vapeval.Verdict, want ...string) {
	t.Helper()
	if v.Denied == "" {
		t.Errorf("%s: admitted, want refused", what)
		return
	}
	for _, w := range want {
		if !strings.Contains(v.Denied, w) {
			t.Errorf("%s: denied %q, want it to say %q", what, v.Denied, w)
		}
	}
}
