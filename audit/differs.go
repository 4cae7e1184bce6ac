package audit

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/inject"
)

// differs says what the engine's upgrade patch would change in the
// containers a stale template's record names: the image, and which other
// parts of the container. Best effort: a Pod or patch that cannot be
// read gives nothing (the classification stands without it).
func differs(pod, patch []byte, recorded *inject.TemplateStatus, st *inject.Status) []string {
	if len(patch) == 0 {
		return nil
	}
	var names []string
	switch {
	case recorded != nil && st.Version == 2:
		names = append(slices.Clone(recorded.InitContainers), recorded.Containers...)
	case st.Legacy != nil:
		names = append(slices.Clone(st.Legacy.InitContainers), st.Legacy.Containers...)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil
	}
	after, err := p.Apply(pod)
	if err != nil {
		return nil
	}
	var before, now corev1.Pod
	if json.Unmarshal(pod, &before) != nil || json.Unmarshal(after, &now) != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		b, a := findContainer(&before, n), findContainer(&now, n)
		switch {
		case b == nil:
		case a == nil:
			out = append(out, fmt.Sprintf("container %s: removed", n))
		default:
			out = append(out, containerChanges(n, b, a)...)
		}
	}
	return out
}

func findContainer(p *corev1.Pod, name string) *corev1.Container {
	for _, l := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range l {
			if l[i].Name == name {
				return &l[i]
			}
		}
	}
	return nil
}

// containerChanges names what differs between two versions of a
// container: the image with both values, other parts by field name. The
// running container has been through the API server's defaulting
// (fieldRef apiVersion, port protocol, probe timings), so only what
// defaulting leaves alone is compared: command, args, env names and
// values, port names and numbers, resources.
func containerChanges(name string, b, a *corev1.Container) []string {
	var out []string
	if b.Image != a.Image {
		out = append(out, fmt.Sprintf("container %s: image %s -> %s", name, b.Image, a.Image))
	}
	var fields []string
	for _, f := range []struct {
		name string
		b, a []string
	}{
		{"command", b.Command, a.Command}, {"args", b.Args, a.Args},
		{"env", envText(b.Env), envText(a.Env)}, {"ports", portText(b.Ports), portText(a.Ports)},
		{"resources", resourceText(b.Resources), resourceText(a.Resources)},
	} {
		if !slices.Equal(f.b, f.a) {
			fields = append(fields, f.name)
		}
	}
	if len(fields) > 0 {
		out = append(out, fmt.Sprintf("container %s: %s", name, strings.Join(fields, ", ")))
	}
	return out
}

func envText(env []corev1.EnvVar) []string {
	out := make([]string, len(env))
	for i, e := range env {
		out[i] = e.Name + "=" + e.Value
	}
	return out
}

func portText(ports []corev1.ContainerPort) []string {
	out := make([]string, len(ports))
	for i, p := range ports {
		out[i] = fmt.Sprintf("%s:%d", p.Name, p.ContainerPort)
	}
	return out
}

func resourceText(r corev1.ResourceRequirements) []string {
	var out []string
	for _, l := range []struct {
		kind string
		list corev1.ResourceList
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		for _, k := range slices.Sorted(maps.Keys(l.list)) {
			q := l.list[k]
			out = append(out, l.kind+"."+string(k)+"="+q.String())
		}
	}
	return out
}
