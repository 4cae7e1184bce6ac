package registration

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/fixture"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/vapeval"
)

// guaranteeYAML is a configuration with what the guarantee must follow:
// revisions and tags, a profile keeping Pods' own containers, one
// injecting hostNetwork Pods in one revision only, profiles locking the
// image (one to another image), two whose Pods may choose an image within
// allowedImages (registries, a repository), and one whose Pods may add
// templates.
const guaranteeYAML = `
revision: v1
defaultProfile: mesh
profiles:
  mesh:
    templates: [mesh-proxy]
    allowedTemplates: [mesh-proxy, otel-agent]
    lockedParams: ["*.image"]
    podSecurity: {maxLevel: privileged}
  agent: {templates: [agent]}
  keep: {templates: [agent], onConflict: keep}
  pinned:
    templates: [agent]
    params: {agent: {image: registry.example/agent:2}}
    lockedParams: [agent.image]
  prefixed:
    templates: [agent]
    allowedImages: [ghcr.io/graftdev/, registry.example/]
  repository:
    templates: [agent]
    params: {agent: {image: registry.example/agent:1}}
    allowedImages: [registry.example/agent]
revisions:
  v2:
    profiles:
      agent: {templates: [agent], injectHostNetwork: true}
tags:
  stable: {revision: v1}
  canary:
    split: [{revision: v2, percent: 10}, {revision: v1, percent: 90}]
`

// rig is a configuration's engines and compiled guarantees.
type rig struct {
	revs     *inject.Revisions
	policies map[string]*vapeval.Policy
}

func newRig(t *testing.T, data string) *rig {
	t.Helper()
	f := parse(t, data)
	rc, err := f.RevisionsConfig(fixture.Dir())
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

// TestGuaranteePassesWhatGraftInjects: for every profile and graft.dev/rev
// value, a Pod graft injected passes on the matchCondition alone (one
// conversion in the API server), and so does that Pod created again
// (graft leaves it as it is).
func TestGuaranteePassesWhatGraftInjects(t *testing.T) {
	r := newRig(t, guaranteeYAML)
	pods := map[string]*corev1.Pod{"app": appPod()}
	withTemplates := appPod()
	withTemplates.Annotations = map[string]string{names.Templates: "otel-agent,mesh-proxy"}
	pods["graft.dev/templates"] = withTemplates
	redirect := appPod()
	redirect.Annotations = map[string]string{names.ParamAnnotation("mesh-proxy", "trafficRedirect"): "init-container"}
	pods["init-container redirect"] = redirect
	for _, profile := range []string{"mesh", "agent", "keep", "pinned", "prefixed"} {
		for _, rev := range []string{"", "v1", "v2", "stable", "canary"} {
			for what, pod := range pods {
				if profile != "mesh" && what != "app" {
					continue
				}
				injected := r.admit(t, pod, profile, rev)
				if len(injected.Spec.InitContainers)+len(injected.Spec.Containers) < 2 {
					t.Fatalf("%s/%s/%s: graft injected nothing", profile, rev, what)
				}
				for _, p := range []*corev1.Pod{injected, r.admit(t, injected, profile, rev)} {
					if v := r.check(t, p, profile, rev); v.Matched {
						t.Errorf("%s, rev %q, %s: the matchCondition holds for a Pod graft injected (denied: %q)", profile, rev, what, v.Denied)
					}
				}
			}
		}
	}
}

// TestGuaranteeRefusesStrippedAndSpoofed: a Pod a later mutator stripped
// of graft's sidecar is refused, naming it; so is one whose record claims
// a container graft did not inject (another image, not native), and one
// holding a container under a sidecar's name that the record does not
// claim.
func TestGuaranteeRefusesStrippedAndSpoofed(t *testing.T) {
	r := newRig(t, guaranteeYAML)
	redirect := appPod()
	redirect.Annotations = map[string]string{names.ParamAnnotation("mesh-proxy", "trafficRedirect"): "init-container"}
	injected := r.admit(t, redirect, "mesh", "")
	status := injected.Annotations[names.Status]

	spoof := appPod()
	spoof.Labels = map[string]string{names.Injected: "v1"}
	spoof.Annotations = map[string]string{names.Status: status}
	spoof.Spec.InitContainers = []corev1.Container{
		{Name: "graft-proxy-init", Image: "ghcr.io/graftdev/graft:v0.1.0"},
		{Name: "graft-proxy", Image: "evil.example/proxy:1", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}},
	}
	emptyRecord := appPod()
	emptyRecord.Annotations = map[string]string{names.Status: `{"version":2}`}
	emptyRecord.Spec.InitContainers = []corev1.Container{{Name: "graft-proxy", Image: "docker.io/envoyproxy/envoy:v1.32.3"}}
	foreign := injected.DeepCopy()
	foreign.Annotations[names.Status] = strings.Replace(status, `"injected":["graft-proxy-init"`, `"injected":["graft-agent","graft-proxy-init"`, 1)
	foreign.Spec.Containers = append(foreign.Spec.Containers, corev1.Container{Name: "graft-agent", Image: "ghcr.io/graftdev/agent:1.0.0"})

	// A name no template of the profile injects is the Pod's own, whatever
	// the record says.
	if v := r.check(t, foreign, "mesh", ""); v.Denied != "" {
		t.Errorf("a record naming a container of another profile's template: denied %q", v.Denied)
	}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"the native sidecar removed", without(injected, "graft-proxy"),
			[]string{"graft injected init container graft-proxy into this Pod", "a mutating admission step after graft removed it"}},
		{"every sidecar removed", without(without(injected, "graft-proxy"), "graft-proxy-init"),
			[]string{"graft injected init container graft-proxy, init container graft-proxy-init into this Pod"}},
		{"another image", edit(injected, "graft-proxy", func(c *corev1.Container) { c.Image = "evil.example/proxy:1" }),
			[]string{"init container graft-proxy is not graft's: its image evil.example/proxy:1 is not one profile mesh injects (",
				"yet graft.dev/status records it as graft's"}},
		{"not native", edit(injected, "graft-proxy", func(c *corev1.Container) { c.RestartPolicy = nil }),
			[]string{"init container graft-proxy is not graft's: graft injects it as native"}},
		{"a record copied next to a container of the Pod's own", spoof,
			[]string{"init container graft-proxy is not graft's: its image evil.example/proxy:1"}},
		{"a record claiming nothing next to a sidecar's name", emptyRecord,
			[]string{"the Pod has init container graft-proxy, named like a sidecar template mesh-proxy injects, but graft.dev/status does not record it"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := r.check(t, c.pod, "mesh", "")
			for _, w := range c.want {
				if !strings.Contains(v.Denied, w) {
					t.Errorf("denied %q, want it to say %q", v.Denied, w)
				}
			}
		})
	}
}

// TestGuaranteeFollowsProxyInitImage: a profile running proxy-init from
// its own registry (parameter proxyInitImage, a container only
// trafficRedirect: init-container adds) gets graft's Pods through its
// guarantee, and a proxy-init running another image, the template's
// default included, refused.
func TestGuaranteeFollowsProxyInitImage(t *testing.T) {
	const mirror = "mirror.example/graft:v0.1.0"
	r := newRig(t, `
defaultProfile: mirror
profiles:
  mirror:
    templates: [mesh-proxy]
    params: {mesh-proxy: {trafficRedirect: init-container, proxyInitImage: "`+mirror+`"}}
    lockedParams: ["*.image", "*.proxyInitImage"]
    podSecurity: {maxLevel: privileged}
`)
	injected := r.admit(t, appPod(), "mirror", "")
	i := slices.IndexFunc(injected.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == "graft-proxy-init" })
	if i < 0 || injected.Spec.InitContainers[i].Image != mirror {
		t.Fatalf("graft's Pod: init containers %+v, want graft-proxy-init running %s", injected.Spec.InitContainers, mirror)
	}
	if v := r.check(t, injected, "mirror", ""); v.Denied != "" {
		t.Errorf("graft's Pod, proxy-init from the profile's image: denied %q", v.Denied)
	}
	for _, image := range []string{"ghcr.io/graftdev/graft:v0.1.0", "evil.example/graft:v0.1.0"} {
		other := edit(injected, "graft-proxy-init", func(c *corev1.Container) { c.Image = image })
		want := "init container graft-proxy-init is not graft's: its image " + image + " is not one profile mirror injects"
		if v := r.check(t, other, "mirror", ""); !strings.Contains(v.Denied, want) {
			t.Errorf("proxy-init running %s: denied %q, want it to say %q", image, v.Denied, want)
		}
	}
}

// TestGuaranteeNamesUnknownRevisions: in a namespace whose graft.dev/rev
// names neither a revision nor a tag, no webhook calls graft, and the
// refusal says so instead of sending the user to check that graft runs.
func TestGuaranteeNamesUnknownRevisions(t *testing.T) {
	r := newRig(t, guaranteeYAML)
	v := r.check(t, appPod(), "mesh", "defualt")
	want := "namespace apps is labelled graft.dev/rev=defualt, which is neither a revision nor a tag graft serves (revisions: v1, v2; tags: canary, stable)"
	if !strings.Contains(v.Denied, want) {
		t.Errorf("denied %q, want %q", v.Denied, want)
	}
	if v := r.check(t, appPod(), "mesh", "canary"); !strings.HasPrefix(v.Denied, "graft did not inject this Pod, and namespace apps requires it (label graft.dev/inject=mesh)") {
		t.Errorf("denied %q, want graft's not-injected message", v.Denied)
	}
}

// TestGuaranteeFollowsProfiles: what graft leaves alone passes, per
// revision where revisions differ; a profile keeping Pods' own containers
// admits one under a sidecar's name.
func TestGuaranteeFollowsProfiles(t *testing.T) {
	r := newRig(t, guaranteeYAML)
	hostNet := appPod()
	hostNet.Spec.HostNetwork = true
	for _, c := range []struct {
		profile, rev string
		pod          *corev1.Pod
		admitted     bool
	}{
		{"agent", "", hostNet, true},
		{"agent", "v1", hostNet, true},
		{"agent", "v2", hostNet, false}, // v2 injects hostNetwork Pods
		{"agent", "canary", hostNet, true},
	} {
		v := r.check(t, c.pod, c.profile, c.rev)
		if (v.Denied == "") != c.admitted {
			t.Errorf("%s rev %q: denied %q, want admitted %v", c.profile, c.rev, v.Denied, c.admitted)
		}
	}
	// Pods for another operating system than the templates' are left
	// alone: by spec.os, node selector, or an affinity leaving Linux out.
	osPod := func(edit func(*corev1.PodSpec)) *corev1.Pod {
		p := appPod()
		edit(&p.Spec)
		return p
	}
	affinity := func(op corev1.NodeSelectorOperator, values ...string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/os", Operator: op, Values: values}}}}}}}
		}
	}
	for what, c := range map[string]struct {
		pod    *corev1.Pod
		exempt bool
	}{
		"spec.os windows":       {osPod(func(s *corev1.PodSpec) { s.OS = &corev1.PodOS{Name: corev1.Windows} }), true},
		"spec.os linux":         {osPod(func(s *corev1.PodSpec) { s.OS = &corev1.PodOS{Name: corev1.Linux} }), false},
		"node selector windows": {osPod(func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"kubernetes.io/os": "windows"} }), true},
		"node selector linux":   {osPod(func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"kubernetes.io/os": "linux"} }), false},
		"affinity In windows":   {osPod(affinity(corev1.NodeSelectorOpIn, "windows")), true},
		"affinity NotIn linux":  {osPod(affinity(corev1.NodeSelectorOpNotIn, "linux")), true},
		"affinity In linux":     {osPod(affinity(corev1.NodeSelectorOpIn, "linux", "windows")), false},
		"affinity on another key": {osPod(func(s *corev1.PodSpec) {
			affinity(corev1.NodeSelectorOpIn, "windows")(s)
			s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Key = "zone"
		}), false},
	} {
		v := r.check(t, c.pod, "agent", "")
		if (v.Denied == "") != c.exempt {
			t.Errorf("%s, not injected: denied %q, want exempt %v", what, v.Denied, c.exempt)
		}
	}

	own := appPod()
	own.Spec.InitContainers = []corev1.Container{{Name: "graft-agent", Image: "mine:1"}}
	kept := r.admit(t, own, "keep", "")
	if v := r.check(t, kept, "keep", ""); v.Denied != "" {
		t.Errorf("onConflict: keep: refused %q", v.Denied)
	}
	// Images: the profile's own, or what a Pod may choose.
	pinned := r.admit(t, appPod(), "pinned", "")
	if v := r.check(t, pinned, "pinned", ""); v.Matched {
		t.Errorf("profile pinned: its own image refused: %q", v.Denied)
	}
	if v := r.check(t, edit(pinned, "graft-agent", func(c *corev1.Container) { c.Image = "ghcr.io/graftdev/agent:1.0.0" }), "pinned", ""); !strings.Contains(v.Denied, "is not one profile pinned injects (registry.example/agent:2)") {
		t.Errorf("profile pinned, the template's default image: denied %q", v.Denied)
	}
	chosen := appPod()
	chosen.Annotations = map[string]string{names.ParamAnnotation("agent", "image"): "registry.example/agent:9"}
	prefixed := r.admit(t, chosen, "prefixed", "")
	if v := r.check(t, prefixed, "prefixed", ""); v.Matched {
		t.Errorf("profile prefixed, an allowed image: %q", v.Denied)
	}
	if v := r.check(t, edit(prefixed, "graft-agent", func(c *corev1.Container) { c.Image = "registry.example.evil/agent:9" }), "prefixed", ""); !strings.Contains(v.Denied, "(ghcr.io/graftdev/*, ghcr.io/graftdev/agent:1.0.0, registry.example/*)") {
		t.Errorf("profile prefixed, another image: denied %q", v.Denied)
	}
	// An allowedImages entry admits its repository's tags and digests,
	// not a repository it is a prefix of, nor a path out of it.
	chosen.Annotations = map[string]string{names.ParamAnnotation("agent", "image"): "registry.example/agent:9"}
	repo := r.admit(t, chosen, "repository", "")
	for image, admitted := range map[string]bool{
		"registry.example/agent:9":                                 true,
		"registry.example/agent":                                   true,
		"registry.example/agent@sha256:" + strings.Repeat("a", 64): true,
		"registry.example/agent/sub:1":                             true,
		"registry.example/agent-evil:1":                            false,
		"registry.example/agentx":                                  false,
		"registry.example/agent/../evil:1":                         false,
		"registry.example/agent//x:1":                              false,
		"registry.example/agent:1 ":                                false,
	} {
		v := r.check(t, edit(repo, "graft-agent", func(c *corev1.Container) { c.Image = image }), "repository", "")
		if v.Matched == admitted {
			t.Errorf("profile repository, image %q: denied %q, want admitted %t", image, v.Denied, admitted)
		}
	}
	// A profile that lets Pods choose any image still checks names and
	// kinds, and that the image is a reference.
	any := r.admit(t, appPod(), "agent", "")
	if v := r.check(t, edit(any, "graft-agent", func(c *corev1.Container) { c.Image = "anything:1" }), "agent", ""); v.Matched {
		t.Errorf("profile agent (image not locked): another image refused: %q", v.Denied)
	}
	if v := r.check(t, edit(any, "graft-agent", func(c *corev1.Container) { c.Image = "anything/../else:1" }), "agent", ""); v.Denied == "" {
		t.Error("profile agent: an image with '..' admitted")
	}
	if v := r.check(t, edit(any, "graft-agent", func(c *corev1.Container) { c.RestartPolicy = nil }), "agent", ""); v.Denied == "" {
		t.Error("profile agent: a graft-agent that is not native admitted")
	}
}
