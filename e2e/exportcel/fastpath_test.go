// Package exportcel runs the policies `graft export` writes through
// kube-apiserver's own admission CEL and JSON Patch code, in process: the
// mutating policy compiled as the MutatingAdmissionPolicy plugin compiles
// it (variables, match conditions, a JSONPatch mutation) and applied as
// its dispatcher applies it. The suite in package e2e compares the
// policies with the webhook through a running API server; these tests
// check, over many more generated Pods than a server round trip each
// allows, what the policies' speed rests on: the fast path for pristine
// Pods writes what the general merge writes, and a Pod the match
// condition passes over on the reinvocation pass is one the general
// merge would leave as it is.
package exportcel

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	regv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/graftdev/graft/export"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

var (
	podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	podGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// mutator is a MutatingAdmissionPolicy compiled as the API server's
// mutating policy plugin compiles it (mutating/compilation.go).
type mutator struct {
	compiler *plugincel.CompositedCompiler
	matcher  matchconditions.Matcher
	patcher  patch.Patcher
	objects  admission.ObjectInterfaces
	// guard tells whether the patch takes its fast path.
	guard plugincel.ConditionEvaluator
}

func compile(t *testing.T, pol *regv1.MutatingAdmissionPolicy) *mutator {
	t.Helper()
	opts := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	var vars []plugincel.NamedExpressionAccessor
	for _, v := range pol.Spec.Variables {
		vars = append(vars, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	c.CompileAndStoreVariables(vars, opts, environment.StoredExpressions)
	var conds []plugincel.ExpressionAccessor
	for i := range pol.Spec.MatchConditions {
		conds = append(conds, (*matchconditions.MatchCondition)(&pol.Spec.MatchConditions[i]))
	}
	m := &mutator{compiler: c}
	m.matcher = matchconditions.NewMatcher(c.CompileCondition(conds, opts, environment.StoredExpressions), pol.Spec.FailurePolicy, "policy", "validate", pol.Name)
	popts := opts
	popts.HasPatchTypes = true
	ev := c.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: pol.Spec.Mutations[0].JSONPatch.Expression}, popts, environment.StoredExpressions)
	if errs := ev.CompilationErrors(); len(errs) > 0 {
		t.Fatalf("policy %s: %v", pol.Name, errs)
	}
	m.patcher = patch.NewJSONPatcher(ev)
	m.guard = c.CompileCondition([]plugincel.ExpressionAccessor{&matchconditions.MatchCondition{Name: "fast", Expression: fastGuard(t, pol)}},
		opts, environment.StoredExpressions)
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	m.objects = admission.NewObjectInterfacesFromScheme(scheme)
	return m
}

func attributes(p *corev1.Pod) *admission.VersionedAttributes {
	a := admission.NewAttributesRecord(p, nil, podGVK, p.Namespace, p.Name, podGVR, "", admission.Create,
		&metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "test"})
	return &admission.VersionedAttributes{Attributes: a, VersionedObject: admission.NewLazyObject(p), VersionedKind: podGVK}
}

// fast tells whether the patch takes its fast path for p.
func (m *mutator) fast(t *testing.T, p *corev1.Pod) bool {
	t.Helper()
	r, _, err := m.guard.ForInput(m.compiler.CreateContext(context.Background()), attributes(p), nil, plugincel.OptionalVariableBindings{}, nil,
		celconfig.RuntimeCELCostBudget)
	if err != nil || r[0].Error != nil {
		t.Fatalf("fast path guard on %s: %v %v", p.Name, err, r[0].Error)
	}
	return r[0].EvalResult.Value() == true
}

// matches runs the match conditions.
func (m *mutator) matches(t *testing.T, p *corev1.Pod) bool {
	t.Helper()
	r := m.matcher.Match(context.Background(), attributes(p), nil, nil)
	if r.Error != nil {
		t.Fatalf("match conditions on %s: %v", p.Name, r.Error)
	}
	return r.Matches
}

// patch applies the mutation as the dispatcher does; an evaluation error
// is returned (the policies' failurePolicy is Ignore).
func (m *mutator) patch(p *corev1.Pod) (*corev1.Pod, error) {
	ctx := m.compiler.CreateContext(context.Background())
	out, err := m.patcher.Patch(ctx, patch.Request{MatchedResource: podGVR, VersionedAttributes: attributes(p), ObjectInterfaces: m.objects},
		celconfig.RuntimeCELCostBudget)
	if err != nil {
		return nil, err
	}
	return out.(*corev1.Pod), nil
}

// The patch is `(guard) ?\n fast path\n: general merge`.
const guardEnd = ") ?\n"

// fastGuard is the condition under which pol's patch takes its fast path.
func fastGuard(t *testing.T, pol *regv1.MutatingAdmissionPolicy) string {
	t.Helper()
	e := pol.Spec.Mutations[0].JSONPatch.Expression
	i := strings.Index(e, guardEnd)
	if !strings.HasPrefix(e, "(") || i < 0 {
		t.Fatalf("policy %s: no fast path in %.100s", pol.Name, e)
	}
	return e[1:i]
}

// generalOnly is pol with its fast path switched off.
func generalOnly(t *testing.T, pol *regv1.MutatingAdmissionPolicy) *regv1.MutatingAdmissionPolicy {
	t.Helper()
	out := pol.DeepCopy()
	e := out.Spec.Mutations[0].JSONPatch.Expression
	out.Spec.Mutations[0].JSONPatch.Expression = "(false" + e[len(fastGuard(t, pol))+1:]
	return out
}

// names of what the built-in templates add, for Pods that collide.
type added struct {
	containers, volumes, secrets, env, annotations, labels []string
	mounts                                                 []templates.Element
}

func builtinAdds(t *testing.T, set *templates.Set) added {
	t.Helper()
	var a added
	for _, tn := range set.Names() {
		tmpl, _ := set.Get(tn)
		f, err := tmpl.Render(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, el := range slices.Concat(f.Containers, f.InitContainers) {
			a.containers = append(a.containers, el.Name)
		}
		for _, el := range f.Volumes {
			a.volumes = append(a.volumes, el.Name)
		}
		for _, el := range f.ImagePullSecrets {
			a.secrets = append(a.secrets, el.Name)
		}
		for _, el := range f.AppEnv {
			a.env = append(a.env, el.Name)
		}
		a.mounts = append(a.mounts, f.AppVolumeMounts...)
		for _, kv := range f.Annotations {
			a.annotations = append(a.annotations, kv.Key)
		}
		for _, kv := range f.Labels {
			a.labels = append(a.labels, kv.Key)
		}
	}
	return a
}

// pod generates a Pod without graft.dev/ annotations (the general merge
// gets those from the e2e suite): mostly pristine, else holding some of
// what a template adds (an annotation, a label, graft.dev/injected, an
// env var or mount, a pull secret, a container or volume name).
func (a added) pod(r *rand.Rand, i int) *corev1.Pod {
	pick := func(n int) bool { return r.IntN(n) == 0 }
	one := func(l []string) string { return l[r.IntN(len(l))] }
	collide := pick(3)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "test"}}
	if !pick(4) {
		p.Annotations = map[string]string{"example.com/a": "x"}
		if collide && pick(3) {
			p.Annotations[one(a.annotations)] = "user"
		}
	}
	if !pick(3) {
		p.Labels = map[string]string{"app": "x"}
		if collide && pick(3) {
			p.Labels[names.Injected] = one([]string{inject.DefaultRevision, "old"})
		}
		if collide && len(a.labels) > 0 && pick(3) {
			p.Labels[one(a.labels)] = "user"
		}
	}
	for c := range 1 + r.IntN(3) {
		ct := corev1.Container{Name: fmt.Sprintf("app-%d", c), Image: "img"}
		if collide && pick(4) {
			ct.Name = one(a.containers)
		}
		switch r.IntN(3) {
		case 1:
			ct.Env = []corev1.EnvVar{}
		case 2:
			ct.Env = []corev1.EnvVar{{Name: "E", Value: "u"}}
			if collide && pick(2) {
				ct.Env = append(ct.Env, corev1.EnvVar{Name: one(a.env), Value: "u"})
			}
		}
		for j := range r.IntN(3) {
			m := corev1.VolumeMount{Name: fmt.Sprintf("d%d", j), MountPath: fmt.Sprintf("/d/%d", j)}
			if collide && pick(2) {
				tm := a.mounts[r.IntN(len(a.mounts))]
				if pick(2) {
					m.Name = tm.Name
				} else {
					m.MountPath = tm.MountPath
				}
			}
			ct.VolumeMounts = append(ct.VolumeMounts, m)
		}
		p.Spec.Containers = append(p.Spec.Containers, ct)
	}
	always := corev1.ContainerRestartPolicyAlways
	for c := range r.IntN(4) {
		ct := corev1.Container{Name: fmt.Sprintf("init-%d", c), Image: "img"}
		if pick(2) {
			ct.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, ct)
	}
	for v := range r.IntN(3) {
		name := fmt.Sprintf("vol-%d", v)
		if collide && pick(3) {
			name = one(a.volumes)
		}
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name})
	}
	if pick(3) {
		p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
		if collide && len(a.secrets) > 0 {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: one(a.secrets)})
		}
	}
	return p
}

// mountToken is what the ServiceAccount plugin's re-run does to the
// containers added since its first run.
func mountToken(p *corev1.Pod) {
	tok := corev1.VolumeMount{Name: "kube-api-access-x", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			if !slices.ContainsFunc(cs[i].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == tok.Name }) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, tok)
			}
		}
	}
}

// laterChanges are what a later admission step may do before the API
// server's reinvocation pass.
var laterChanges = []func(*corev1.Pod){
	mountToken,
	func(p *corev1.Pod) {
		mountToken(p)
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "late", Image: "img"})
	},
	func(p *corev1.Pod) {
		if len(p.Annotations) > 0 {
			delete(p.Annotations, slices.Sorted(maps.Keys(p.Annotations))[0])
		}
	},
	func(p *corev1.Pod) {
		if len(p.Spec.InitContainers) > 0 {
			p.Spec.InitContainers = p.Spec.InitContainers[1:]
		}
	},
	func(p *corev1.Pod) {
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].Env = nil
		}
	},
}

// TestFastPathIsTheGeneralMerge: for every built-in profile, on generated
// Pods, the mutation writes what the general merge alone writes; and on
// the reinvocation pass (after the ServiceAccount plugin's re-run and
// other later changes), a Pod the match conditions pass over is one the
// general merge leaves as it is.
func TestFastPathIsTheGeneralMerge(t *testing.T) {
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cfg := inject.DefaultConfig()
	adds := builtinAdds(t, set)
	r := rand.New(rand.NewPCG(26, 2026))
	for _, profile := range slices.Sorted(maps.Keys(cfg.Profiles)) {
		t.Run(profile, func(t *testing.T) {
			pols, err := export.Export(cfg, set, profile)
			if err != nil {
				t.Fatal(err)
			}
			full := compile(t, pols.Mutating)
			general := compile(t, generalOnly(t, pols.Mutating))
			const pods = 60
			fast, done := 0, 0
			for i := range pods {
				p := adds.pod(r, i)
				if !full.matches(t, p) {
					t.Fatalf("%s: the match conditions pass over a fresh Pod", p.Name)
				}
				got, err := full.patch(p)
				want, werr := general.patch(p)
				if err != nil || werr != nil {
					t.Fatalf("%s: evaluation failed: %v / general merge: %v", p.Name, err, werr)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("%s: the policy and the general merge disagree (-general +policy):\n%s", p.Name, d)
				}
				if full.fast(t, p) {
					fast++
				}
				for _, change := range laterChanges {
					again := got.DeepCopy()
					change(again)
					if full.matches(t, again) {
						continue
					}
					done++
					out, err := general.patch(again)
					if err != nil {
						t.Fatalf("%s: general merge on the reinvocation pass: %v", p.Name, err)
					}
					if !apiequality.Semantic.DeepEqual(out, again) {
						t.Fatalf("%s: the match conditions pass over a Pod the general merge changes (-pod +merged):\n%s", p.Name, cmp.Diff(again, out))
					}
				}
			}
			t.Logf("%d Pods, %d on the fast path; %d reinvocation passes skipped", pods, fast, done)
			if fast < pods/3 || fast == pods || done < pods/3 {
				t.Errorf("the generator is off: %d Pods on the fast path, %d passes skipped, of %d Pods", fast, done, pods)
			}
		})
	}
}
