package audit

import (
	"encoding/json"
	"fmt"
	"reflect"
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
// container: the image with both values, other parts by field name.
func containerChanges(name string, b, a *corev1.Container) []string {
	var out []string
	if b.Image != a.Image {
		out = append(out, fmt.Sprintf("container %s: image %s -> %s", name, b.Image, a.Image))
	}
	var fields []string
	for _, f := range []struct {
		name string
		b, a any
	}{
		{"command", b.Command, a.Command}, {"args", b.Args, a.Args}, {"env", b.Env, a.Env},
		{"ports", b.Ports, a.Ports}, {"resources", b.Resources, a.Resources},
		{"volumeMounts", b.VolumeMounts, a.VolumeMounts}, {"probes", []any{b.ReadinessProbe, b.LivenessProbe, b.StartupProbe},
			[]any{a.ReadinessProbe, a.LivenessProbe, a.StartupProbe}},
		{"securityContext", b.SecurityContext, a.SecurityContext},
	} {
		if !reflect.DeepEqual(f.b, f.a) {
			fields = append(fields, f.name)
		}
	}
	if len(fields) > 0 {
		out = append(out, fmt.Sprintf("container %s: %s", name, strings.Join(fields, ", ")))
	}
	return out
}
