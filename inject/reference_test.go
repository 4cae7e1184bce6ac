package inject

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/wI2L/jsondiff"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/graftdev/graft/internal/names"
)

// referenceInject is the slow, obvious way to inject a Pod that carries no
// graft.dev/status graft can read and none of graft's objects: decode the
// whole Pod into corev1 types, leave out every template with an object of
// its name the Pod already has, or a collision, (keep) or refuse the Pod
// (denied), refuse a key in graft's domains the Pod may not set, add what
// the plan adds, write the status with encoding/json, diff the two whole
// documents with jsondiff and apply that patch. It exists only to check the fast path: both must
// produce the same Pod. Init containers are placed "first" (the only
// placement the templates it is used with have).
func referenceInject(t *testing.T, pl *plan, object []byte, keep bool) (patched []byte, denied bool) {
	t.Helper()
	var pod corev1.Pod
	if err := json.Unmarshal(object, &pod); err != nil {
		t.Fatalf("reference: decode: %v", err)
	}
	orig, err := json.Marshal(&pod)
	if err != nil {
		t.Fatal(err)
	}
	decode := func(raw []byte, v any) {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("reference: %v", err)
		}
	}
	hasContainer := func(name string) bool {
		return slices.ContainsFunc(append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...),
			func(c corev1.Container) bool { return c.Name == name })
	}
	hasVolume := func(name string) bool {
		return slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
	}
	skip := make([]bool, len(pl.tmpls))
	// Collisions: what a template adds that an app container already uses.
	for ti := range pl.tmpls {
		if referenceCollides(pl, ti, &pod) {
			if !keep {
				return nil, true
			}
			skip[ti] = true
		}
	}
	for _, k := range []struct {
		els   []element
		taken func(string) bool
	}{{pl.inits, hasContainer}, {pl.sidecars, hasContainer}, {pl.volumes, hasVolume}} {
		for _, el := range k.els {
			taken := k.taken(el.name)
			if taken && !keep {
				return nil, true
			}
			skip[el.tmpl] = skip[el.tmpl] || taken
		}
	}
	// Keys in graft's domains a Pod may not set (the plans it is used
	// with render none).
	for _, m := range []struct {
		kvs     map[string]string
		allowed func(string) bool
	}{
		{pod.Annotations, func(k string) bool {
			return k == names.Status || k == names.Templates || names.ParamAnnotationKey(k)
		}},
		{pod.Labels, func(k string) bool { return k == names.Injected }},
	} {
		for k := range m.kvs {
			if names.Reserved(k) && !m.allowed(k) {
				return nil, true
			}
		}
	}
	st := Status{Version: 2}
	// What graft keeps of a template it leaves out: the Pod's objects of
	// its names, by kind, in the Pod's order.
	for ti, tm := range pl.tmpls {
		if !skip[ti] {
			continue
		}
		k := KeptStatus{Name: tm.name}
		own := func(els []element, name string) bool {
			return slices.ContainsFunc(els, func(el element) bool { return el.tmpl == ti && el.name == name })
		}
		for _, c := range pod.Spec.InitContainers {
			if own(pl.inits, c.Name) || own(pl.sidecars, c.Name) {
				k.InitContainers = append(k.InitContainers, c.Name)
			}
		}
		for _, c := range pod.Spec.Containers {
			if own(pl.inits, c.Name) || own(pl.sidecars, c.Name) {
				k.Containers = append(k.Containers, c.Name)
			}
		}
		for _, v := range pod.Spec.Volumes {
			if own(pl.volumes, v.Name) {
				k.Volumes = append(k.Volumes, v.Name)
			}
		}
		st.Kept = append(st.Kept, k)
	}
	entries := make([]TemplateStatus, len(pl.tmpls))
	for i, tm := range pl.tmpls {
		entries[i] = TemplateStatus{Name: tm.name, Revision: tm.revision, Digest: tm.digest}
	}
	var front []corev1.Container
	for _, el := range pl.inits {
		if !skip[el.tmpl] {
			var c corev1.Container
			decode(el.raw, &c)
			front = append(front, c)
			entries[el.tmpl].InitContainers = append(entries[el.tmpl].InitContainers, el.name)
		}
	}
	pod.Spec.InitContainers = append(front, pod.Spec.InitContainers...)
	for _, el := range pl.sidecars {
		if !skip[el.tmpl] {
			var c corev1.Container
			decode(el.raw, &c)
			pod.Spec.Containers = append(pod.Spec.Containers, c)
			entries[el.tmpl].Containers = append(entries[el.tmpl].Containers, el.name)
		}
	}
	for _, el := range pl.volumes {
		if !skip[el.tmpl] {
			var v corev1.Volume
			decode(el.raw, &v)
			pod.Spec.Volumes = append(pod.Spec.Volumes, v)
			entries[el.tmpl].Volumes = append(entries[el.tmpl].Volumes, el.name)
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if slices.ContainsFunc(pl.sidecars, func(el element) bool { return el.name == c.Name && !skip[el.tmpl] }) {
			continue // one the reference just added
		}
		edit := func(tmpl int) *AppEdits {
			e := &entries[tmpl]
			if e.AppContainers == nil {
				e.AppContainers = map[string]AppEdits{}
			}
			a := e.AppContainers[c.Name]
			return &a
		}
		for _, el := range pl.appEnv {
			if !skip[el.tmpl] && !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == el.name }) {
				var ev corev1.EnvVar
				decode(el.raw, &ev)
				c.Env = append(c.Env, ev)
				a := edit(el.tmpl)
				a.Env = append(a.Env, el.name)
				entries[el.tmpl].AppContainers[c.Name] = *a
			}
		}
		for _, el := range pl.appMount {
			if !skip[el.tmpl] && !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == el.name || m.MountPath == el.mountPath }) {
				var m corev1.VolumeMount
				decode(el.raw, &m)
				c.VolumeMounts = append(c.VolumeMounts, m)
				a := edit(el.tmpl)
				a.VolumeMounts = append(a.VolumeMounts, el.name)
				entries[el.tmpl].AppContainers[c.Name] = *a
			}
		}
	}
	// Pod-level resources: each template's containers' requests added to
	// each pod-level request, their limits (else requests) to each limit.
	if res := pod.Spec.Resources; res != nil && (len(res.Requests) > 0 || len(res.Limits) > 0) {
		adds := make([]PodResources, len(pl.tmpls))
		for _, l := range [][]element{pl.inits, pl.sidecars} {
			for _, el := range l {
				if skip[el.tmpl] {
					continue
				}
				var c corev1.Container
				decode(el.raw, &c)
				for name := range res.Requests {
					if q, ok := c.Resources.Requests[name]; ok && !q.IsZero() {
						sum := res.Requests[name]
						sum.Add(q)
						res.Requests[name] = sum
						adds[el.tmpl].Requests = addRecorded(adds[el.tmpl].Requests, string(name), q)
					}
				}
				for name := range res.Limits {
					q, ok := c.Resources.Limits[name]
					if !ok {
						q, ok = c.Resources.Requests[name]
					}
					if ok && !q.IsZero() {
						sum := res.Limits[name]
						sum.Add(q)
						res.Limits[name] = sum
						adds[el.tmpl].Limits = addRecorded(adds[el.tmpl].Limits, string(name), q)
					}
				}
			}
		}
		for i := range entries {
			if len(adds[i].Requests) > 0 || len(adds[i].Limits) > 0 {
				entries[i].PodResources = &adds[i]
			}
		}
	}
	// graft.dev/injected: the revision, recorded by the first template
	// injected, unless the Pod already carries it.
	if i := slices.Index(skip, false); i >= 0 && pod.Labels[names.Injected] != pl.revision {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[names.Injected] = pl.revision
		entries[i].Labels = append(entries[i].Labels, names.Injected)
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for i, e := range entries {
		if !skip[i] {
			st.Injected = append(append(st.Injected, e.InitContainers...), e.Containers...)
			st.Templates = append(st.Templates, e)
		}
	}
	var status bytes.Buffer
	enc := json.NewEncoder(&status)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(st); err != nil {
		t.Fatal(err)
	}
	pod.Annotations[names.Status] = string(bytes.TrimSpace(status.Bytes()))
	desired, err := json.Marshal(&pod)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsondiff.CompareJSON(orig, desired, jsondiff.LCS())
	if err != nil {
		t.Fatalf("reference: diff: %v", err)
	}
	pb, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(pb)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(orig)
	if err != nil {
		t.Fatalf("reference: apply: %v", err)
	}
	return out, false
}

// referenceCollides is findCollision on a typed Pod none of whose
// containers graft injected.
func referenceCollides(pl *plan, ti int, pod *corev1.Pod) bool {
	t := &pl.tmpls[ti]
	all := append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...)
	proto := func(p corev1.Protocol) corev1.Protocol { return cmp.Or(p, corev1.ProtocolTCP) }
	for _, gp := range t.ports {
		for _, c := range all {
			for _, pt := range c.Ports {
				if int64(pt.ContainerPort) == gp.number && proto(pt.Protocol) == proto(corev1.Protocol(gp.protocol)) ||
					gp.name != "" && pt.Name == gp.name {
					return true
				}
			}
		}
	}
	for _, ru := range t.reserved {
		for _, c := range all {
			u := pod.Spec.SecurityContext.RunAsUser
			if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
				u = c.SecurityContext.RunAsUser
			}
			if u != nil && *u == ru.uid {
				return true
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		for _, el := range pl.appEnv {
			if el.tmpl == ti && !el.overridable && slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == el.name }) {
				return true
			}
		}
		for _, el := range pl.appMount {
			if el.tmpl == ti && slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == el.mountPath && m.Name != el.name }) {
				return true
			}
		}
	}
	return false
}

// addRecorded adds q to m[name], as graft.dev/status records it.
func addRecorded(m map[string]string, name string, q resource.Quantity) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	if v, ok := m[name]; ok {
		sum := resource.MustParse(v)
		sum.Add(q)
		q = sum
	}
	m[name] = q.String()
	return m
}
