package registration

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/graftdev/graft/internal/guaranteecorpus"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/vapeval"
)

// guaranteeYAML is a configuration with what the guarantee must follow:
// revisions and tags, a profile keeping Pods' own containers, one
// injecting hostNetwork Pods in one revision only, profiles locking the
// image (one to another image), one whose Pods may choose an image within
// allowed prefixes, one falling back to defaults on bad parameters, and
// one whose Pods may add templates.
const guaranteeYAML = `
revision: v1
defaultProfile: mesh
profiles:
  mesh:
    templates: [mesh-proxy]
    allowedTemplates: [mesh-proxy, otel-agent, secrets-agent, log-shipper]
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
  lenient:
    templates: [agent]
    onInvalidParams: default
  hostnet:
    templates: [mesh-proxy]
    injectHostNetwork: true
revisions:
  v2:
    profiles:
      agent: {templates: [agent], injectHostNetwork: true}
      mesh:
        templates: [mesh-proxy]
        allowedTemplates: [mesh-proxy, otel-agent, secrets-agent, log-shipper]
        lockedParams: ["*.image"]
        podSecurity: {maxLevel: privileged}
        params: {mesh-proxy: {image: docker.io/envoyproxy/envoy:v1.33.0}}
tags:
  stable: {revision: v1}
  canary:
    split: [{revision: v2, percent: 10}, {revision: v1, percent: 90}]
`

var revLabels = []string{"", "v1", "v2", "stable", "canary"}

// TestGuaranteePassesWhatGraftInjects: for every profile and graft.dev/rev
// value, a Pod graft injected passes; one without parameter annotations on
// the matchCondition alone. The validations alone pass it too: the
// matchCondition's shortcut admits nothing they refuse. With or without
// the ServiceAccount plugin's token mount, and created again through graft.
func TestGuaranteePassesWhatGraftInjects(t *testing.T) {
	r := newRig(t, guaranteeYAML)
	pods := map[string]*corev1.Pod{
		"app":                 appPod(),
		"graft.dev/templates": withAnnotations(appPod(), names.Templates, "otel-agent, mesh-proxy,secrets-agent,log-shipper"),
		"init-container redirect": withAnnotations(appPod(), names.ParamAnnotation("mesh-proxy", "trafficRedirect"), "init-container",
			names.ParamAnnotation("mesh-proxy", "excludeInboundPorts"), "8080, 9090"),
		"parameters": withAnnotations(appPod(), names.ParamAnnotation("mesh-proxy", "concurrency"), "+08",
			names.ParamAnnotation("mesh-proxy", "holdApplicationUntilProxyStarts"), "false", names.Templates, "mesh-proxy,secrets-agent",
			names.ParamAnnotation("secrets-agent", "secretPaths"), "secret/a, secret/b", names.ParamAnnotation("secrets-agent", "templateFormat"), "env"),
	}
	for _, profile := range []string{"mesh", "agent", "keep", "pinned", "prefixed", "lenient"} {
		for _, rev := range revLabels {
			for what, pod := range pods {
				if profile != "mesh" && what != "app" {
					continue
				}
				injected := r.inject(t, pod, profile, rev)
				if len(injected.Spec.InitContainers)+len(injected.Spec.Containers) < 2 {
					t.Fatalf("%s/%s/%s: graft injected nothing", profile, rev, what)
				}
				for _, sa := range []bool{true, false} {
					stored := guaranteecorpus.Store(injected, sa)
					v := r.check(t, stored, profile, rev)
					if v.Denied != "" || what == "app" && v.Matched {
						t.Errorf("%s, rev %q, %s (token mount %v): matched %v, denied %q", profile, rev, what, sa, v.Matched, v.Denied)
					}
					if bare := r.request(t, vapeval.Request{Object: stored}, profile, rev, true); bare.Denied != "" {
						t.Errorf("%s, rev %q, %s: the validations alone refuse graft's Pod: %q", profile, rev, what, bare.Denied)
					}
				}
				again := guaranteecorpus.Store(r.inject(t, guaranteecorpus.Store(injected, true), profile, rev), true)
				if v := r.check(t, again, profile, rev); v.Denied != "" {
					t.Errorf("%s, rev %q, %s, created again through graft: denied %q", profile, rev, what, v.Denied)
				}
			}
		}
	}
}

// TestGuaranteeRefusesAttacks: the numbered attacks of issue 32 and their
// variants, each refused with a message naming the container or key and
// what is wrong.
func TestGuaranteeRefusesAttacks(t *testing.T) {
	r := newRig(t, guaranteeYAML)
	injected := r.admit(t, appPod(), "mesh", "")
	status := injected.Annotations[names.Status]
	withSecrets := r.admit(t, withAnnotations(appPod(), names.Templates, "mesh-proxy,secrets-agent"), "mesh", "")
	native := corev1.ContainerRestartPolicyAlways
	own := func(name, image string) corev1.Container {
		return corev1.Container{Name: name, Image: image, RestartPolicy: &native,
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}}
	}
	bypassed := withAnnotations(appPod(), names.Status, status)
	bypassed.Labels = map[string]string{names.Injected: "v1"}
	bypassed.Spec.InitContainers = []corev1.Container{own("graft-secrets-agent", "evil.example/agent:1")}
	root := int64(0)
	hostPath := corev1.HostPathUnset
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"1: another template's sidecar name beside graft's", func() *corev1.Pod {
			p := injected.DeepCopy()
			p.Spec.InitContainers = append(p.Spec.InitContainers, own("graft-secrets-agent", "evil.example/agent:1"))
			return guaranteecorpus.Store(p, true)
		}(), []string{"init container graft-secrets-agent is named like a sidecar of template secrets-agent, which graft does not inject into this Pod"}},
		{"1: graft bypassed, a copied record", guaranteecorpus.Store(bypassed, true), []string{"graft-proxy"}},
		{"1: a template no profile of this one injects", edit(injected, "app", func(p *corev1.Pod, _ *corev1.Container) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "graft-agent", Image: "ghcr.io/graftdev/agent:1.0.0"})
		}), []string{"container graft-agent is named like a sidecar of template agent, which profile mesh never injects"}},
		{"2: graft's name and image, its own command, root, capabilities and mount", edit(injected, "graft-proxy", func(p *corev1.Pod, c *corev1.Container) {
			c.Command = []string{"/bin/sh", "-c", "nc -l 15021"}
			c.SecurityContext.RunAsUser = &root
			c.SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN", "SYS_ADMIN"}
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: &hostPath}}})
			c.VolumeMounts = append([]corev1.VolumeMount{{Name: "host", MountPath: "/host"}}, c.VolumeMounts...)
		}), []string{"init container graft-proxy is not graft's: field command is not what template mesh-proxy renders for this Pod (revision v1, profile mesh)"}},
		{"2: graft's name, image and command, runs as root", edit(injected, "graft-proxy", func(_ *corev1.Pod, c *corev1.Container) { c.SecurityContext.RunAsUser = &root }),
			[]string{"init container graft-proxy is not graft's: field securityContext is not what template mesh-proxy renders"}},
		{"3: graft's volume name, a hostPath, mounted by graft's sidecar", edit(withSecrets, "app", func(p *corev1.Pod, _ *corev1.Container) {
			for i := range p.Spec.Volumes {
				if p.Spec.Volumes[i].Name == "graft-secrets" {
					p.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc", Type: &hostPath}}
				}
			}
		}), []string{"is not graft's: the volume graft-secrets it mounts is not what template secrets-agent renders"}},
		{"3: a token volume of the Pod's own, mounted into graft's sidecar", edit(injected, "app", func(p *corev1.Pod, _ *corev1.Container) {
			for i := range p.Spec.Volumes {
				if strings.HasPrefix(p.Spec.Volumes[i].Name, "kube-api-access-") {
					p.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run", Type: &hostPath}}
				}
			}
		}), []string{"init container graft-proxy is not graft's: field volumeMounts"}},
		{"4: reserved annotation preset", withAnnotations(injected, "redirect.graft.dev/mode", "none"),
			[]string{`annotation redirect.graft.dev/mode="none" is not what template mesh-proxy renders for this Pod ("cni")`}},
		{"4: reserved annotation removed", func() *corev1.Pod {
			p := injected.DeepCopy()
			delete(p.Annotations, "redirect.graft.dev/proxy-uid")
			return p
		}(), []string{"annotation redirect.graft.dev/proxy-uid, which template mesh-proxy renders for this Pod, is missing"}},
		{"4: an annotation of graft's domain graft never writes", withAnnotations(injected, "redirect.graft.dev/bypass", "true"),
			[]string{"annotation redirect.graft.dev/bypass is in graft's domain"}},
		{"4: a label of graft's domain", func() *corev1.Pod {
			p := injected.DeepCopy()
			p.Labels["sidecar.graft.dev/trusted"] = "yes"
			return p
		}(), []string{"label sidecar.graft.dev/trusted is in graft's domain"}},
		{"4: a locked parameter", func() *corev1.Pod {
			p := withAnnotations(injected, names.ParamAnnotation("mesh-proxy", "image"), "evil.example/envoy:1")
			return edit(p, "graft-proxy", func(_ *corev1.Pod, c *corev1.Container) { c.Image = "evil.example/envoy:1" })
		}(), []string{`annotation graft.dev/mesh-proxy.image="evil.example/envoy:1": parameter image of template mesh-proxy is locked by profile "mesh"`}},
		{"4: an unknown parameter", withAnnotations(injected, names.ParamAnnotation("mesh-proxy", "uid"), "0"),
			[]string{`annotation graft.dev/mesh-proxy.uid: template mesh-proxy has no parameter "uid"`}},
		{"5: a bogus record", withAnnotations(appPod(), names.Status, "x"), []string{"graft.dev/status records no template mesh-proxy injected at revision v1"}},
		{"5: a record claiming nothing", withAnnotations(appPod(), names.Status, `{"version":2}`), []string{"graft.dev/status records no template mesh-proxy"}},
		{"5: no record", appPod(), []string{"graft did not inject this Pod, and namespace apps requires it (label graft.dev/inject=mesh)"}},
		{"7: a later webhook sets command and securityContext", edit(injected, "graft-proxy", func(_ *corev1.Pod, c *corev1.Container) {
			c.Command = []string{"/usr/local/bin/other"}
			c.SecurityContext = &corev1.SecurityContext{RunAsUser: &root, Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
		}), []string{"init container graft-proxy is not graft's: field command"}},
		{"7: a later webhook adds an env var", edit(injected, "graft-proxy", func(_ *corev1.Pod, c *corev1.Container) {
			c.Env = append(c.Env, corev1.EnvVar{Name: "HTTP_PROXY", Value: "http://evil"})
		}), []string{"field env"}},
		{"7: a later webhook removes the sidecar", without(injected, "graft-proxy"),
			[]string{"graft adds init container graft-proxy (template mesh-proxy) to this Pod, but the Pod leaving admission lacks it: a mutating admission step after graft removed it"}},
		{"graft's sidecar among the containers", func() *corev1.Pod {
			p := without(injected, "graft-proxy")
			for _, c := range injected.Spec.InitContainers {
				if c.Name == "graft-proxy" {
					c.RestartPolicy = nil
					p.Spec.Containers = append(p.Spec.Containers, c)
				}
			}
			return p
		}(), []string{"container graft-proxy is not graft's: template mesh-proxy adds it as an init container"}},
		{"a parameter's value not rendered", edit(withAnnotations(injected, names.ParamAnnotation("mesh-proxy", "concurrency"), "4"), "graft-proxy", func(*corev1.Pod, *corev1.Container) {}),
			[]string{"init container graft-proxy is not graft's: field args"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantDenied(t, "CREATE", r.check(t, c.pod, "mesh", ""), c.want...)
		})
	}
}

// TestGuaranteeAllowsDifferences: the differences the definition allows
// (GUARANTEE-SPEC), each on graft's sidecar of every built-in template.
func TestGuaranteeAllowsDifferences(t *testing.T) {
	r := newRig(t, guaranteeYAML)
	injected := r.admit(t, withAnnotations(appPod(), names.Templates, "mesh-proxy,otel-agent,secrets-agent,log-shipper"), "mesh", "")
	for _, e := range guaranteecorpus.Edits() {
		for _, c := range append(injected.Spec.InitContainers, injected.Spec.Containers...) {
			if c.Name == "app" {
				continue
			}
			p := edit(injected, c.Name, e.Apply)
			v := r.check(t, p, "mesh", "")
			switch {
			case e.Graft() && v.Denied != "":
				t.Errorf("%s on %s, an allowed difference: denied %q", e.Name, c.Name, v.Denied)
			case !e.Graft():
				field := "field " + e.Field
				if e.Field == "probe" {
					field = "Probe"
				}
				wantDenied(t, e.Name+" on "+c.Name, v, c.Name+" is not graft's", field)
			}
		}
	}
}

// TestGuaranteeUpdates: an UPDATE that changes no container under graft's
// names and no annotation in graft's domains passes (a label edit; a Pod
// admitted before the policy); any other is checked as a create: an image
// swapped after admission is refused, `graft rollout --in-place`'s upgrade
// (a native sidecar's image and the record, to another served revision's)
// passes where that revision serves the namespace. Ephemeral containers
// may not take graft's names.
func TestGuaranteeUpdates(t *testing.T) {
	r := newRig(t, guaranteeYAML)
	v1 := r.admit(t, appPod(), "mesh", "canary")
	relabel := func(p *corev1.Pod) *corev1.Pod {
		p = p.DeepCopy()
		p.Labels["pod-template-hash"] = "x"
		return p
	}
	if v := r.update(t, v1, relabel(v1), "mesh", "canary"); v.Matched {
		t.Errorf("a label edit: checked in full (denied %q)", v.Denied)
	}
	// A Pod admitted before the policy, not graft's by today's rules.
	old := edit(v1, "graft-proxy", func(_ *corev1.Pod, c *corev1.Container) { c.Args = c.Args[:2] })
	if v := r.update(t, old, relabel(old), "mesh", "canary"); v.Denied != "" {
		t.Errorf("a label edit of a Pod admitted before: denied %q", v.Denied)
	}
	swapped := edit(v1, "graft-proxy", func(_ *corev1.Pod, c *corev1.Container) { c.Image = "evil.example/envoy:1" })
	wantDenied(t, "6: UPDATE swapping graft's image", r.update(t, v1, swapped, "mesh", "canary"),
		"init container graft-proxy is not graft's: field image")
	app := edit(v1, "app", func(_ *corev1.Pod, c *corev1.Container) { c.Image = "app:2" })
	if v := r.update(t, v1, app, "mesh", "canary"); v.Denied != "" {
		t.Errorf("an app's image updated: denied %q", v.Denied)
	}
	param := withAnnotations(v1, names.ParamAnnotation("mesh-proxy", "concurrency"), "8")
	wantDenied(t, "UPDATE adding a parameter graft did not render", r.update(t, v1, param, "mesh", "canary"), "field args")

	// graft rollout --in-place: the native sidecar's image and the record
	// become revision v2's (rollout/inplace.go).
	v2 := r.admit(t, appPod(), "mesh", "v2")
	upgraded := edit(v1, "graft-proxy", func(_ *corev1.Pod, c *corev1.Container) {
		for _, n := range v2.Spec.InitContainers {
			if n.Name == c.Name {
				c.Image = n.Image
			}
		}
	})
	upgraded.Annotations[names.Status] = v2.Annotations[names.Status]
	upgraded.Labels[names.Injected] = "v2"
	if v := r.update(t, v1, upgraded, "mesh", "canary"); v.Denied != "" {
		t.Errorf("rollout --in-place to v2 on the canary tag: denied %q", v.Denied)
	}
	wantDenied(t, "rollout --in-place to v2 where only v1 serves", r.update(t, v1, upgraded, "mesh", "v1"),
		"graft.dev/status records no template mesh-proxy injected at revision v1")

	for name, denied := range map[string]bool{"graft-secrets-agent": true, "graft-proxy": true, "debugger": false} {
		p := v1.DeepCopy()
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1"}}}
		v := r.request(t, vapeval.Request{Operation: admission.Update, SubResource: "ephemeralcontainers", OldObject: v1, Object: p}, "mesh", "canary", false)
		if denied {
			wantDenied(t, "ephemeral "+name, v, "ephemeral container "+name+" takes the name of a sidecar graft's templates inject")
		} else if v.Denied != "" {
			t.Errorf("ephemeral %s: denied %q", name, v.Denied)
		}
	}
}

// TestGuaranteeRevisions: a revision label accepts that revision's render
// only; no label and tags every served revision's; an unknown label is
// named.
func TestGuaranteeRevisions(t *testing.T) {
	r := newRig(t, guaranteeYAML)
	v1 := r.admit(t, appPod(), "mesh", "v1")
	v2 := r.admit(t, appPod(), "mesh", "v2")
	for _, rev := range []string{"", "stable", "canary"} {
		for what, p := range map[string]*corev1.Pod{"v1": v1, "v2": v2} {
			if v := r.check(t, p, "mesh", rev); v.Denied != "" {
				t.Errorf("label %q, Pod of %s: denied %q", rev, what, v.Denied)
			}
		}
	}
	wantDenied(t, "label v1, Pod of v2", r.check(t, v2, "mesh", "v1"), "graft.dev/status records no template mesh-proxy injected at revision v1")
	// v2's record next to v1's sidecar: the record picks the revision,
	// the content must be that revision's.
	mixed := v1.DeepCopy()
	mixed.Annotations[names.Status] = v2.Annotations[names.Status]
	wantDenied(t, "v2's record, v1's sidecar", r.check(t, mixed, "mesh", "canary"), "init container graft-proxy is not graft's: field image")
	v := r.check(t, appPod(), "mesh", "defualt")
	wantDenied(t, "unknown label", v, "namespace apps is labelled graft.dev/rev=defualt, which is neither a revision nor a tag graft serves (revisions: v1, v2; tags: canary, stable)")
}

// TestGuaranteeFollowsProfiles: what graft leaves alone passes, per
// revision where revisions differ; a keeping profile admits the Pod's own
// container recorded as kept; images follow the profile's values, locks
// and allowedImages.
func TestGuaranteeFollowsProfiles(t *testing.T) {
	r := newRig(t, guaranteeYAML)
	hostNet := appPod()
	hostNet.Spec.HostNetwork = true
	for _, c := range []struct {
		rev      string
		admitted bool
	}{{"", true}, {"v1", true}, {"v2", false}, {"canary", true}} {
		if v := r.check(t, hostNet, "agent", c.rev); (v.Denied == "") != c.admitted {
			t.Errorf("hostNetwork, rev %q: denied %q, want admitted %v", c.rev, v.Denied, c.admitted)
		}
	}
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
		"affinity NotIn linux":  {osPod(affinity(corev1.NodeSelectorOpNotIn, "linux")), true},
		"affinity In linux":     {osPod(affinity(corev1.NodeSelectorOpIn, "linux", "windows")), false},
		"mirror Pod":            {withAnnotations(appPod(), names.MirrorAnnotation, "x"), true},
		"selects no template":   {withAnnotations(appPod(), names.Templates, " , "), true},
	} {
		if v := r.check(t, c.pod, "agent", ""); (v.Denied == "") != c.exempt {
			t.Errorf("%s, not injected: denied %q, want exempt %v", what, v.Denied, c.exempt)
		}
	}

	// onConflict: keep: the Pod's own graft-agent, recorded as kept.
	own := appPod()
	own.Spec.InitContainers = []corev1.Container{{Name: "graft-agent", Image: "mine:1"}}
	kept := withAnnotations(own, names.Status, `{"version":2,"kept":["graft-agent"]}`)
	if v := r.check(t, guaranteecorpus.Store(kept, true), "keep", ""); v.Denied != "" {
		t.Errorf("onConflict: keep, the Pod's own container recorded as kept: denied %q", v.Denied)
	}
	wantDenied(t, "onConflict: keep, not recorded as kept", r.check(t, guaranteecorpus.Store(withAnnotations(own, names.Status, `{"version":2}`), true), "keep", ""),
		"graft.dev/status records no template agent")
	wantDenied(t, "onConflict: deny, recorded as kept", r.check(t, guaranteecorpus.Store(kept, true), "agent", ""), "graft.dev/status records no template agent")

	// Images: the profile's own, or what a Pod may choose.
	pinned := r.admit(t, appPod(), "pinned", "")
	if v := r.check(t, pinned, "pinned", ""); v.Matched {
		t.Errorf("profile pinned: its own image refused: %q", v.Denied)
	}
	wantDenied(t, "profile pinned, the template's default image", r.check(t, edit(pinned, "graft-agent", func(_ *corev1.Pod, c *corev1.Container) {
		c.Image = "ghcr.io/graftdev/agent:1.0.0"
	}), "pinned", ""), "field image")
	chosen := r.admit(t, withAnnotations(appPod(), names.ParamAnnotation("agent", "image"), "registry.example/agent:9"), "prefixed", "")
	if v := r.check(t, chosen, "prefixed", ""); v.Denied != "" {
		t.Errorf("profile prefixed, an allowed image: denied %q", v.Denied)
	}
	// An image reference outside the entries is refused by allowedImages;
	// one that is no image reference by the parameter's format first, as
	// the engine checks them.
	for img, why := range map[string]string{
		"registry.example.evil/agent:9":    `the image is not one profile "prefixed" allows (allowedImages: ghcr.io/graftdev/, registry.example/)`,
		"registry.example/../evil/agent:9": `must be a container image reference: it contains ".."`,
		"registry.example//agent:9":        `must be a container image reference: it has an empty path segment`,
	} {
		p := withAnnotations(r.admit(t, appPod(), "prefixed", ""), names.ParamAnnotation("agent", "image"), img)
		wantDenied(t, "profile prefixed, "+img, r.check(t, p, "prefixed", ""), `annotation graft.dev/agent.image=`+`"`+img+`": `+why)
	}
	// A lenient profile renders defaults in place of bad values, and says
	// nothing of them; the sidecar must be that render.
	lenient := withAnnotations(r.admit(t, appPod(), "lenient", ""), names.ParamAnnotation("agent", "port"), "80")
	if v := r.check(t, lenient, "lenient", ""); v.Denied != "" {
		t.Errorf("profile lenient, an out-of-range port left at its default: denied %q", v.Denied)
	}
	// A hostNetwork Pod: the API server sets each port's hostPort.
	hostNetPod := r.admit(t, hostNet, "hostnet", "")
	if v := r.check(t, hostNetPod, "hostnet", ""); v.Denied != "" {
		t.Errorf("a hostNetwork Pod graft injected: denied %q", v.Denied)
	}
	wantDenied(t, "a hostNetwork Pod, another hostPort", r.check(t, edit(hostNetPod, "graft-proxy", func(_ *corev1.Pod, c *corev1.Container) {
		c.Ports[0].HostPort = 80
	}), "hostnet", ""), "field ports")
}

// TestGuaranteeFollowsProxyInitImage: a profile running proxy-init from
// its own registry (parameter proxyInitImage, a container only
// trafficRedirect: init-container adds) gets graft's Pods through its
// guarantee, and a proxy-init running another image, the template's
// default included, is refused.
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
		other := edit(injected, "graft-proxy-init", func(_ *corev1.Pod, c *corev1.Container) { c.Image = image })
		wantDenied(t, "proxy-init running "+image, r.check(t, other, "mirror", ""),
			"init container graft-proxy-init is not graft's: field image")
	}
}
