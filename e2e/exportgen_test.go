package e2e

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// podGen generates Pods for one profile that probe what the engine
// decides: the names its templates inject, taken by the user; lists and
// maps absent or full; parameters set valid and invalid; template
// selections allowed and not; the Pods graft skips.
type podGen struct {
	allowed     []string
	params      []paramRef
	containers  []string // names of injected containers and init containers
	volumes     []string
	env         []string
	mounts      []templates.Element
	annotations []string
}

func newPodGen(cfg inject.Config, set *templates.Set, profile string) (*podGen, error) {
	p := cfg.Profiles[profile]
	g := &podGen{allowed: p.AllowedTemplates}
	if len(g.allowed) == 0 {
		g.allowed = p.Templates
	}
	for _, tn := range append(slices.Clone(p.Templates), g.allowed...) {
		t, ok := set.Get(tn)
		if !ok {
			return nil, fmt.Errorf("no template %s", tn)
		}
		for i := range t.Params {
			g.params = append(g.params, paramRef{tn, &t.Params[i]})
		}
		f, err := t.Render(nil)
		if err != nil {
			return nil, err
		}
		for _, el := range append(slices.Clone(f.Containers), f.InitContainers...) {
			g.containers = append(g.containers, el.Name)
		}
		for _, el := range f.Volumes {
			g.volumes = append(g.volumes, el.Name)
		}
		for _, el := range f.AppEnv {
			g.env = append(g.env, el.Name)
		}
		g.mounts = append(g.mounts, f.AppVolumeMounts...)
		for _, kv := range f.Annotations {
			g.annotations = append(g.annotations, kv.Key)
		}
	}
	return g, nil
}

// paramValues are tried on every parameter: some valid for some types,
// most invalid for most; the engine and the policy must agree on each.
var paramValues = []string{
	"", " ", "0", "1", "-1", "+7", "2", "16", "1024", "9000", "65536", "99999999999999999999",
	"true", "false", "yes", "on",
	"10m", "0.25", "1.5", "500m", "64Mi", "1Gi", "3Gi", "1e3", "lots",
	"1s", "90s", "1m30s", "5m", "1h", "48h", "500ms", "1d", "0",
	"debug", "info", "trace", "off", "init-container", "none", "cni", "label", "podName", "yaml", "env", "loud",
	"80", "80, 443", " 80 ,8080", "80,,443", "80,99999", "a,b",
	"secret/data/a,secret/data/b", "secret/data/x", "app", "My.Role", "auth/kubernetes",
	"https://vault.example:8200", "ftp://x", "otel.example:4317", "fluentd:24224", "host:0",
	"/var/log/app", "/logs/x.y", "relative/path", "registry.example/img:1", "UPPER/img", "img@sha256:abc",
	"app.kubernetes.io/name", "team", "a\x01b", "é", `q"uote`, "tab\there",
}

func (g *podGen) pod(r *rand.Rand, name string) *corev1.Pod {
	pick := func(n int) bool { return r.IntN(n) == 0 }
	one := func(list []string) string { return list[r.IntN(len(list))] }
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}

	ann := map[string]string{}
	if pick(3) {
		ann["example.com/note"] = "kept"
	}
	for range r.IntN(3) {
		if len(g.params) > 0 && !pick(4) {
			pr := g.params[r.IntN(len(g.params))]
			v := one(paramValues)
			if !pick(3) {
				v = pr.valid(r)
			}
			ann["graft.dev/"+pr.tmpl+"."+pr.p.Name] = v
		} else if len(g.params) > 0 {
			ann["graft.dev/"+g.params[r.IntN(len(g.params))].tmpl+".noSuchParam"] = "x"
		}
	}
	if pick(5) {
		ann["graft.dev/templates"] = g.selection(r)
	}
	if pick(8) {
		ann["graft.dev/status"] = "stale"
	}
	if len(g.annotations) > 0 && pick(4) {
		ann[one(g.annotations)] = "user"
	}
	if pick(25) {
		ann["kubernetes.io/config.mirror"] = "mirror"
		p.Spec.NodeName = "node-1" // as a mirror Pod must
	}
	if len(ann) > 0 || pick(2) {
		p.Annotations = ann
	}
	if pick(3) {
		p.Labels = map[string]string{"app": "shop"}
		if pick(8) {
			p.Labels["graft.dev/inject"] = "false"
		}
	}
	p.Spec.HostNetwork = pick(12)

	used := map[string]bool{}
	name2 := func(base string, collide []string) string {
		n := base
		if len(collide) > 0 && pick(10) {
			n = one(collide)
		}
		for used[n] {
			n += "x"
		}
		used[n] = true
		return n
	}
	volumes := map[string]bool{}
	for i := range 1 + r.IntN(3) {
		c := corev1.Container{Name: name2(fmt.Sprintf("app-%d", i), g.containers), Image: "registry.invalid/app:1"}
		envSeen := map[string]bool{}
		for j := range r.IntN(4) {
			n := fmt.Sprintf("E%d", j)
			// An env var or mount path of graft's collides with the
			// template's unless the template lets apps set it: rarer than
			// names, so that enough Pods are injected to compare.
			if len(g.env) > 0 && pick(8) {
				n = one(g.env)
			}
			if !envSeen[n] {
				envSeen[n] = true
				c.Env = append(c.Env, corev1.EnvVar{Name: n, Value: "user"})
			}
		}
		paths := map[string]bool{}
		for j := range r.IntN(3) {
			m := corev1.VolumeMount{Name: fmt.Sprintf("data-%d", j), MountPath: fmt.Sprintf("/data/%d", j)}
			if len(g.mounts) > 0 && pick(8) {
				gm := g.mounts[r.IntN(len(g.mounts))]
				if pick(2) {
					m.Name = gm.Name
				} else {
					m.MountPath = gm.MountPath
				}
			}
			if !paths[m.MountPath] {
				paths[m.MountPath] = true
				volumes[m.Name] = true
				c.VolumeMounts = append(c.VolumeMounts, m)
			}
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	always := corev1.ContainerRestartPolicyAlways
	for i := range r.IntN(4) {
		c := corev1.Container{Name: name2(fmt.Sprintf("init-%d", i), g.containers), Image: "registry.invalid/init:1"}
		if pick(2) {
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
	for range r.IntN(2) {
		volumes[name2("extra", g.volumes)] = true
	}
	for _, v := range slices.Sorted(maps.Keys(volumes)) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	if pick(6) {
		p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	}
	return p
}

// paramRef is a parameter of a template.
type paramRef struct {
	tmpl string
	p    *templates.Param
}

// valid is a valid value of the parameter: half the time its default
// (which the exported policies record like the webhook whatever the
// parameter's type), else one of paramValues the parameter accepts.
func (pr paramRef) valid(r *rand.Rand) string {
	ok := []string{pr.p.Default}
	if r.IntN(2) == 0 {
		return pr.p.Default
	}
	for _, v := range paramValues {
		if _, err := pr.p.Parse(v); err == nil {
			ok = append(ok, v)
		}
	}
	return ok[r.IntN(len(ok))]
}

// selection is a graft.dev/templates value: allowed names, sometimes
// reordered, repeated, padded, empty or naming a stranger.
func (g *podGen) selection(r *rand.Rand) string {
	names := slices.Clone(g.allowed)
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	names = names[:r.IntN(len(names)+1)]
	switch r.IntN(6) {
	case 0:
		names = append(names, "no-such-template")
	case 1:
		if len(names) > 0 {
			names = append(names, " "+names[0]+" ")
		}
	case 2:
		return " , "
	}
	return strings.Join(names, ",")
}
