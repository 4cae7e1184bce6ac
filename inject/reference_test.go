package inject

import (
	"encoding/json"
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/wI2L/jsondiff"
	corev1 "k8s.io/api/core/v1"
)

// referenceInject is the slow, obvious way to inject: decode the whole Pod
// into corev1 types, add what the plan adds, diff the two whole documents
// with jsondiff and apply that patch. It exists only to check the fast
// path: both must produce the same Pod.
func referenceInject(t *testing.T, pl *plan, object []byte) []byte {
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
	has := func(name string) bool {
		for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
			if c.Name == name {
				return true
			}
		}
		return false
	}
	// Init containers: "first" placement (the only one the built-in agent uses).
	var front []corev1.Container
	for _, el := range pl.inits {
		if !has(el.name) {
			var c corev1.Container
			decode(el.raw, &c)
			front = append(front, c)
		}
	}
	pod.Spec.InitContainers = append(front, pod.Spec.InitContainers...)
	for _, el := range pl.sidecars {
		if !has(el.name) {
			var c corev1.Container
			decode(el.raw, &c)
			pod.Spec.Containers = append(pod.Spec.Containers, c)
		}
	}
	for _, el := range pl.volumes {
		if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == el.name }) {
			var v corev1.Volume
			decode(el.raw, &v)
			pod.Spec.Volumes = append(pod.Spec.Volumes, v)
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if pl.isOwn(c.Name) {
			continue
		}
		for _, el := range pl.appEnv {
			if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == el.name }) {
				var ev corev1.EnvVar
				decode(el.raw, &ev)
				c.Env = append(c.Env, ev)
			}
		}
		for _, el := range pl.appMount {
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == el.name || m.MountPath == el.mountPath }) {
				var m corev1.VolumeMount
				decode(el.raw, &m)
				c.VolumeMounts = append(c.VolumeMounts, m)
			}
		}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	var status string
	decode(pl.status.raw, &status)
	pod.Annotations[annotationStatus] = status
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
	return out
}
