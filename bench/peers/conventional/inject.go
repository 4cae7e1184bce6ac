package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// maxBody is what a webhook must accept: reviews of a few MiB.
const maxBody = 7 << 20

// Names graft uses, the engine's own.
const (
	injectLabel      = names.Inject
	statusAnnotation = names.Status
	// injectedLabel carries the revision graft injected from; the peer
	// serves what graft's default revision does.
	injectedLabel    = names.Injected
	injectedRevision = "default"
	mirrorAnnotation = names.MirrorAnnotation
)

var excludedNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// part is one template of the profile, rendered.
type part struct {
	name      string
	placement templates.Placement
	frag      *templates.Fragment
}

// injector holds the profile's fragments decoded into typed values once.
type injector struct {
	status string
	// inits are grouped by placement, each in template order.
	inits       map[templates.Placement][]corev1.Container
	containers  []corev1.Container
	volumes     []corev1.Volume
	pullSecrets []corev1.LocalObjectReference
	appEnv      []corev1.EnvVar
	appMounts   []corev1.VolumeMount
	annotations []templates.KV
	labels      []templates.KV
	audit       map[string]string
}

func elementNames(els []templates.Element) []string {
	var out []string
	for _, e := range els {
		out = append(out, e.Name)
	}
	return out
}

func newInjectorFrom(parts []part) (*injector, error) {
	in := &injector{inits: map[templates.Placement][]corev1.Container{}}
	var names, containers, inits, volumes []string
	for _, p := range parts {
		f := p.frag
		names = append(names, p.name)
		containers = append(containers, elementNames(f.Containers)...)
		inits = append(inits, elementNames(f.InitContainers)...)
		volumes = append(volumes, elementNames(f.Volumes)...)
		in.annotations = append(in.annotations, f.Annotations...)
		in.labels = append(in.labels, f.Labels...)
		var placed []corev1.Container
		for _, d := range []struct {
			els []templates.Element
			add func(raw []byte) error
		}{
			{f.InitContainers, func(b []byte) error { return decodeInto(b, &placed) }},
			{f.Containers, func(b []byte) error { return decodeInto(b, &in.containers) }},
			{f.Volumes, func(b []byte) error { return decodeInto(b, &in.volumes) }},
			{f.ImagePullSecrets, func(b []byte) error { return decodeInto(b, &in.pullSecrets) }},
			{f.AppEnv, func(b []byte) error { return decodeInto(b, &in.appEnv) }},
			{f.AppVolumeMounts, func(b []byte) error { return decodeInto(b, &in.appMounts) }},
		} {
			for _, el := range d.els {
				if err := d.add(el.Raw); err != nil {
					return nil, fmt.Errorf("template %s: element %s: %w", p.name, el.Name, err)
				}
			}
		}
		in.inits[p.placement] = append(in.inits[p.placement], placed...)
	}
	// graft's version 1 status: the same for every Pod of the profile.
	status, err := json.Marshal(struct {
		Templates      []string `json:"templates"`
		Containers     []string `json:"containers,omitempty"`
		InitContainers []string `json:"initContainers,omitempty"`
		Volumes        []string `json:"volumes,omitempty"`
	}{names, containers, inits, volumes})
	if err != nil {
		return nil, err
	}
	in.status = string(status)
	in.audit = map[string]string{"injected-templates": strings.Join(names, ",")}
	return in, nil
}

func decodeInto[T any](raw []byte, list *[]T) error {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}

func (in *injector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	out, err := in.admit(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// admit decodes the review (v1 and v1beta1 share the shape), answers it
// and encodes the answer in the request's apiVersion.
func (in *injector) admit(body []byte) ([]byte, error) {
	var rev admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &rev); err != nil {
		return nil, fmt.Errorf("decode AdmissionReview: %w", err)
	}
	if rev.Kind != "AdmissionReview" || rev.Request == nil {
		return nil, errors.New("not an AdmissionReview request")
	}
	switch rev.APIVersion {
	case "admission.k8s.io/v1", "admission.k8s.io/v1beta1":
	default:
		return nil, fmt.Errorf("unsupported apiVersion %q", rev.APIVersion)
	}
	out := admissionv1.AdmissionReview{TypeMeta: rev.TypeMeta, Response: in.review(rev.Request)}
	return json.Marshal(out)
}

func (in *injector) review(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Kind.Kind != "Pod" || req.Resource.Resource != "pods" || req.SubResource != "" ||
		req.Operation != admissionv1.Create || slices.Contains(excludedNamespaces, req.Namespace) {
		return resp
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusBadRequest, Message: "decode Pod: " + err.Error()}
		return resp
	}
	if pod.Labels[injectLabel] == "false" || pod.Annotations[statusAnnotation] != "" ||
		pod.Annotations[mirrorAnnotation] != "" || pod.Spec.HostNetwork {
		return resp
	}
	mutated := pod.DeepCopy()
	in.mutate(mutated)
	raw, err := json.Marshal(mutated)
	if err == nil {
		var ops []jsonpatch.Operation
		if ops, err = jsonpatch.CreatePatch(req.Object.Raw, raw); err == nil && len(ops) > 0 {
			resp.Patch, err = json.Marshal(ops)
			pt := admissionv1.PatchTypeJSONPatch
			resp.PatchType = &pt
			resp.AuditAnnotations = in.audit
		}
	}
	if err != nil {
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusInternalServerError, Message: "patch: " + err.Error()}
	}
	return resp
}

// mutate adds the fragment to pod, keeping anything already there.
func (in *injector) mutate(pod *corev1.Pod) {
	spec := &pod.Spec
	apps := len(spec.Containers)
	missing := func(cs []corev1.Container) []corev1.Container {
		var out []corev1.Container
		for _, c := range cs {
			if !slices.ContainsFunc(spec.InitContainers, func(x corev1.Container) bool { return x.Name == c.Name }) {
				out = append(out, *c.DeepCopy())
			}
		}
		return out
	}
	first := missing(in.inits[templates.PlaceFirst])
	beforeInit := missing(in.inits[templates.PlaceBeforeInit])
	last := missing(in.inits[templates.PlaceLast])
	// before-init goes after the Pod's own native sidecars.
	split := 0
	for split < len(spec.InitContainers) && isSidecar(spec.InitContainers[split]) {
		split++
	}
	merged := slices.Concat(first, spec.InitContainers[:split], beforeInit, spec.InitContainers[split:], last)
	if len(merged) > 0 {
		spec.InitContainers = merged
	}
	for _, c := range in.containers {
		if !slices.ContainsFunc(spec.Containers, func(x corev1.Container) bool { return x.Name == c.Name }) {
			spec.Containers = append(spec.Containers, *c.DeepCopy())
		}
	}
	for _, v := range in.volumes {
		if !slices.ContainsFunc(spec.Volumes, func(x corev1.Volume) bool { return x.Name == v.Name }) {
			spec.Volumes = append(spec.Volumes, *v.DeepCopy())
		}
	}
	for _, s := range in.pullSecrets {
		if !slices.Contains(spec.ImagePullSecrets, s) {
			spec.ImagePullSecrets = append(spec.ImagePullSecrets, s)
		}
	}
	for i := range apps {
		c := &spec.Containers[i]
		for _, e := range in.appEnv {
			if !slices.ContainsFunc(c.Env, func(x corev1.EnvVar) bool { return x.Name == e.Name }) {
				c.Env = append(c.Env, *e.DeepCopy())
			}
		}
		for _, m := range in.appMounts {
			if !slices.ContainsFunc(c.VolumeMounts, func(x corev1.VolumeMount) bool { return x.Name == m.Name || x.MountPath == m.MountPath }) {
				c.VolumeMounts = append(c.VolumeMounts, m)
			}
		}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for _, kv := range in.annotations {
		if _, ok := pod.Annotations[kv.Key]; !ok {
			pod.Annotations[kv.Key] = kv.Value
		}
	}
	pod.Annotations[statusAnnotation] = in.status
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	for _, kv := range in.labels {
		if _, ok := pod.Labels[kv.Key]; !ok {
			pod.Labels[kv.Key] = kv.Value
		}
	}
	pod.Labels[injectedLabel] = injectedRevision
}

func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
