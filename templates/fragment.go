package templates

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"text/template"

	corev1 "k8s.io/api/core/v1"
)

// funcs are the helpers fragments may use, besides text/template's own.
// quote and toJson make values safe to embed in YAML whatever they contain.
// Each one's Example line is rendered into docs/reference/templates.md.
var funcs = template.FuncMap{
	// quote writes its argument as a double-quoted string with Go's
	// escapes, which YAML reads back unchanged whatever it holds.
	//
	// Example: image: {{ .image | quote }}
	"quote": quoteFunc,
	// toJson writes its argument as JSON: a list parameter becomes a YAML
	// flow sequence, a string a quoted scalar.
	//
	// Example: args: {{ toJson .hosts }}
	"toJson": toJSONFunc,
	// join writes the items of a list parameter separated by its first
	// argument.
	//
	// Example: --hosts={{ join "," .hosts }}
	"join": joinFunc,
}

// fragmentDoc is the rendered YAML's shape. Every key is optional; each
// list element is validated strictly against its Kubernetes type and needs
// a name, unique within its list.
type fragmentDoc struct {
	// Containers (core/v1 Container) are added to spec.containers, after
	// the Pod's own.
	Containers []json.RawMessage `json:"containers"`
	// InitContainers (core/v1 Container) are added to spec.initContainers
	// as a group, where the template's placement says. Give an entry
	// restartPolicy: Always to make it a native sidecar, which runs
	// alongside the app containers.
	InitContainers []json.RawMessage `json:"initContainers"`
	// Volumes (core/v1 Volume) are added to spec.volumes.
	Volumes []json.RawMessage `json:"volumes"`
	// ImagePullSecrets (core/v1 LocalObjectReference: {name: ...}) are
	// added to spec.imagePullSecrets.
	ImagePullSecrets []json.RawMessage `json:"imagePullSecrets"`
	// Annotations are set on the Pod where it does not have them already.
	Annotations map[string]string `json:"annotations"`
	// Labels are set on the Pod where it does not have them already.
	Labels map[string]string `json:"labels"`
	// AppContainers are edits to every app container: each container of
	// spec.containers that graft did not inject, including ones another
	// mutator adds later.
	AppContainers struct {
		// Env vars (core/v1 EnvVar) are added to an app container that does
		// not set a var of the same name already.
		Env []json.RawMessage `json:"env"`
		// VolumeMounts (core/v1 VolumeMount) are added to an app container
		// that has no mount of the same name or mountPath already;
		// mountPath is required.
		VolumeMounts []json.RawMessage `json:"volumeMounts"`
	} `json:"appContainers"`
}

// parseFragment reads a fragment rendered with tokens (opaque.go).
func parseFragment(rendered []byte) (*Fragment, error) {
	js, err := document(rendered)
	if err != nil {
		return nil, err
	}
	var doc fragmentDoc
	if err := strictUnmarshal(js, &doc); err != nil {
		return nil, err
	}
	f := &Fragment{}
	lists := []struct {
		what string
		in   []json.RawMessage
		out  *[]Element
		typ  func() any
	}{
		{"containers", doc.Containers, &f.Containers, func() any { return &corev1.Container{} }},
		{"initContainers", doc.InitContainers, &f.InitContainers, func() any { return &corev1.Container{} }},
		{"volumes", doc.Volumes, &f.Volumes, func() any { return &corev1.Volume{} }},
		{"imagePullSecrets", doc.ImagePullSecrets, &f.ImagePullSecrets, func() any { return &corev1.LocalObjectReference{} }},
		{"appContainers.env", doc.AppContainers.Env, &f.AppEnv, func() any { return &corev1.EnvVar{} }},
		{"appContainers.volumeMounts", doc.AppContainers.VolumeMounts, &f.AppVolumeMounts, func() any { return &corev1.VolumeMount{} }},
	}
	for _, l := range lists {
		seen := map[string]bool{}
		for i, raw := range l.in {
			el, err := newElement(raw, l.typ())
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", l.what, i, err)
			}
			if seen[el.Name] {
				return nil, fmt.Errorf("%s[%d]: duplicate name %q", l.what, i, el.Name)
			}
			seen[el.Name] = true
			*l.out = append(*l.out, el)
		}
	}
	f.Annotations = sortedKVs(doc.Annotations)
	f.Labels = sortedKVs(doc.Labels)
	return f, nil
}

// newElement validates raw against the Kubernetes type typ and returns it
// as compact JSON with sorted keys.
func newElement(raw json.RawMessage, typ any) (Element, error) {
	if err := strictUnmarshal(raw, typ); err != nil {
		return Element{}, err
	}
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return Element{}, fmt.Errorf("not an object: %w", err)
	}
	name, _ := generic["name"].(string)
	if name == "" {
		return Element{}, fmt.Errorf("name is required")
	}
	el := Element{Name: name}
	if mp, ok := generic["mountPath"].(string); ok {
		el.MountPath = mp
	}
	if _, isMount := typ.(*corev1.VolumeMount); isMount && el.MountPath == "" {
		return Element{}, fmt.Errorf("volumeMount %q: mountPath is required", name)
	}
	b, err := json.Marshal(generic) // maps marshal with sorted keys
	if err != nil {
		return Element{}, err
	}
	el.Raw = b
	return el, nil
}

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	return nil
}

func sortedKVs(m map[string]string) []KV {
	if len(m) == 0 {
		return nil
	}
	out := make([]KV, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, KV{Key: k, Value: m[k]})
	}
	return out
}
