package inject

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/graftdev/graft/internal/names"
)

// Removing what graft owns works on the Pod as generic JSON: it is for
// the rare paths (an upgrade, graft uninject), and a generic document
// keeps every field no Kubernetes version knows and every number's
// spelling. Only objects graft.dev/status names are removed.

// decodeDoc decodes a Pod's JSON, keeping numbers as written.
func decodeDoc(obj []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if doc == nil {
		return nil, errors.New("not a JSON object")
	}
	if _, ok := doc["metadata"].(map[string]any); !ok {
		return nil, errors.New("metadata is not an object")
	}
	if _, ok := doc["spec"].(map[string]any); !ok {
		return nil, errors.New("spec is not an object")
	}
	return doc, nil
}

// owned is what to remove: names by kind, and per app container the env
// var names and mounts (by volume name).
type owned struct {
	containers, volumes, secrets, annotations, labels []string
	env, mounts                                       map[string][]string
}

func (o *owned) addTemplate(t *TemplateStatus) {
	o.containers = append(append(o.containers, t.InitContainers...), t.Containers...)
	o.volumes = append(o.volumes, t.Volumes...)
	o.secrets = append(o.secrets, t.ImagePullSecrets...)
	o.annotations = append(o.annotations, t.Annotations...)
	o.labels = append(o.labels, t.Labels...)
	for c, a := range t.AppContainers {
		if o.env == nil {
			o.env, o.mounts = map[string][]string{}, map[string][]string{}
		}
		o.env[c] = append(o.env[c], a.Env...)
		o.mounts[c] = append(o.mounts[c], a.VolumeMounts...)
	}
}

func (o *owned) addLegacy(l *LegacyStatus) {
	o.containers = append(append(o.containers, l.InitContainers...), l.Containers...)
	o.volumes = append(o.volumes, l.Volumes...)
}

// strip removes o from doc. Mounts of a removed volume go too, wherever
// they are, unless keep names the volume (it is about to be added again):
// a mount of a volume the Pod lacks would make the Pod invalid. A list or
// map left empty is removed with its key.
func (o *owned) strip(doc map[string]any, keep []string) {
	spec := doc["spec"].(map[string]any)
	meta := doc["metadata"].(map[string]any)
	for _, key := range []string{"initContainers", "containers"} {
		filterList(spec, key, "name", o.containers)
	}
	filterList(spec, "volumes", "name", o.volumes)
	filterList(spec, "imagePullSecrets", "name", o.secrets)
	filterMap(meta, "annotations", o.annotations)
	filterMap(meta, "labels", o.labels)
	var gone []string
	for _, v := range o.volumes {
		if !slices.Contains(keep, v) {
			gone = append(gone, v)
		}
	}
	for _, key := range []string{"initContainers", "containers"} {
		l, _ := spec[key].([]any)
		for _, c := range l {
			cm, ok := c.(map[string]any)
			if !ok {
				continue
			}
			name, _ := cm["name"].(string)
			if key == "containers" {
				filterList(cm, "env", "name", o.env[name])
				filterList(cm, "volumeMounts", "name", o.mounts[name])
			}
			filterList(cm, "volumeMounts", "name", gone)
		}
	}
}

// filterList removes from the list m[key] the objects whose field is one
// of names, and the key if that empties the list.
func filterList(m map[string]any, key, field string, names []string) {
	l, ok := m[key].([]any)
	if !ok || len(names) == 0 {
		return
	}
	kept := slices.DeleteFunc(slices.Clone(l), func(e any) bool {
		em, _ := e.(map[string]any)
		v, _ := em[field].(string)
		return em != nil && slices.Contains(names, v)
	})
	switch {
	case len(kept) == len(l):
	case len(kept) == 0:
		delete(m, key)
	default:
		m[key] = kept
	}
}

// filterMap removes keys from the map m[key], and the key if that empties
// the map.
func filterMap(m map[string]any, key string, keys []string) {
	mm, ok := m[key].(map[string]any)
	if !ok || len(keys) == 0 {
		return
	}
	n := len(mm)
	for _, k := range keys {
		delete(mm, k)
	}
	if len(mm) == 0 && n > 0 {
		delete(m, key)
	}
}

// statusOf reads the status annotation of doc; ok is false without one.
func statusOf(doc map[string]any) (Status, bool, error) {
	ann, _ := doc["metadata"].(map[string]any)["annotations"].(map[string]any)
	v, ok := ann[names.Status]
	if !ok {
		return Status{}, false, nil
	}
	s, isString := v.(string)
	if !isString {
		return Status{}, true, errors.New(names.Status + " is not a string")
	}
	st, err := ParseStatus(s)
	return st, true, err
}

// setStatus sets (or, for an empty value, removes) the status annotation.
func setStatus(doc map[string]any, value string) {
	meta := doc["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if value == "" {
		filterMap(meta, "annotations", []string{names.Status})
		return
	}
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	ann[names.Status] = value
}

// Uninjected is what Uninject found and does.
type Uninjected struct {
	// Status is the record read from the Pod (zero without one).
	Status Status
	// Patch is the RFC 6902 patch that removes what the record names and
	// the record itself: "[]" for a Pod without graft.dev/status.
	Patch []byte
	// Pod is the Pod with Patch applied.
	Pod []byte
}

// Uninject returns what removes from pod (a Pod's JSON) exactly what its
// graft.dev/status says graft added, then the annotation; also every
// mount of a removed volume (a Pod cannot mount a volume it lacks). Env
// vars, annotations and mounts the record does not name stay, as does
// everything else. It is `graft uninject`'s engine, and needs no
// configuration: the record says it all. A status it cannot read is an
// error (it cannot tell what graft added).
func Uninject(pod []byte) (Uninjected, error) {
	doc, err := decodeDoc(pod)
	if err != nil {
		return Uninjected{}, fmt.Errorf("uninject: %w", err)
	}
	st, found, err := statusOf(doc)
	if err != nil {
		return Uninjected{}, fmt.Errorf("uninject: %w", err)
	}
	if !found {
		return Uninjected{Patch: []byte("[]"), Pod: slices.Clone(pod)}, nil
	}
	var o owned
	for i := range st.Templates {
		o.addTemplate(&st.Templates[i])
		subtractPodResources(doc, &st.Templates[i])
	}
	if st.Legacy != nil {
		o.addLegacy(st.Legacy)
	}
	o.strip(doc, nil)
	setStatus(doc, "")
	after, err := json.Marshal(doc)
	if err != nil {
		return Uninjected{}, fmt.Errorf("uninject: %w", err)
	}
	patch, err := diffDocs(pod, after, lcsAffordableDoc(pod))
	if err != nil {
		return Uninjected{}, fmt.Errorf("uninject: %w", err)
	}
	out, err := applyPatch(pod, patch)
	if err != nil {
		return Uninjected{}, fmt.Errorf("uninject: %w", err)
	}
	return Uninjected{Status: st, Patch: patch, Pod: out}, nil
}
