package manifest

import (
	"errors"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// PodSpot is a Pod inside a document: the document itself (kind Pod), or
// the Pod template of a workload.
type PodSpot struct {
	What string // "Deployment web", for messages
	// Holder is the Pod mapping itself, or the template mapping (metadata
	// and spec) of a workload.
	Holder    *yaml.Node
	IsPod     bool
	Path      string // where Holder is, for messages: "spec.template"
	pointer   string // where Holder is in the document, as a JSON Pointer
	Namespace string // the object's metadata.namespace, if any
	// Object is the workload's own mapping (the Pod itself for a Pod).
	Object *yaml.Node
	item   string // "items[3]: " for an item of a List
	// Holder is nil for an object whose Pods graft does not inject here:
	// NoTemplate says why a kind that carries Pods has no template (an
	// Argo Rollout naming a workload); Foreign is where an object of a kind
	// graft does not know has a Pod spec (spec.template.spec).
	NoTemplate, Foreign string
}

// Ref names the object as kubectl does, kind/name, after the List item
// it is, if any.
func (s PodSpot) Ref() string {
	return prefixed(s.item, MapString(s.Object, "kind")+"/"+objectName(MapGet(s.Object, "metadata")))
}

// PodJSON returns the Pod as JSON: the object itself for a Pod, or a Pod
// built from a workload's template.
func (s PodSpot) PodJSON() ([]byte, error) {
	if s.IsPod {
		return NodeJSON(s.Holder)
	}
	meta := []byte("{}")
	if m := MapGet(s.Holder, "metadata"); m != nil && m.Kind == yaml.MappingNode {
		var err error
		if meta, err = NodeJSON(m); err != nil {
			return nil, err
		}
	}
	spec, err := NodeJSON(MapGet(s.Holder, "spec"))
	if err != nil {
		return nil, err
	}
	pod := make([]byte, 0, len(meta)+len(spec)+64)
	pod = append(pod, `{"apiVersion":"v1","kind":"Pod","metadata":`...)
	pod = append(pod, meta...)
	pod = append(pod, `,"spec":`...)
	pod = append(pod, spec...)
	return append(pod, '}'), nil
}

type groupKind struct{ group, kind string }

// templatePaths maps the kinds graft injects into to where their Pod
// template lives; nil is the Pod itself. Other kinds pass through.
var templatePaths = map[groupKind][]string{
	{"", "Pod"}:                   nil,
	{"", "ReplicationController"}: {"spec", "template"},
	{"apps", "Deployment"}:        {"spec", "template"},
	{"apps", "StatefulSet"}:       {"spec", "template"},
	{"apps", "DaemonSet"}:         {"spec", "template"},
	{"apps", "ReplicaSet"}:        {"spec", "template"},
	{"extensions", "Deployment"}:  {"spec", "template"},
	{"extensions", "DaemonSet"}:   {"spec", "template"},
	{"extensions", "ReplicaSet"}:  {"spec", "template"},
	{"batch", "Job"}:              {"spec", "template"},
	{"batch", "CronJob"}:          {"spec", "jobTemplate", "spec", "template"},
	// Pod-template carriers many clusters have besides the built-in ones.
	{"apps.openshift.io", "DeploymentConfig"}: {"spec", "template"},
	{"argoproj.io", "Rollout"}:                {"spec", "template"},
}

// FindPods returns the Pods of doc, in order. A v1 List is searched item
// by item. Kinds without Pods give none.
func FindPods(doc *Document) ([]PodSpot, error) {
	root := doc.Root()
	if root == nil {
		return nil, nil
	}
	return findPodsIn(root, "", "", typeMeta{})
}

// typeMeta is an object's apiVersion and kind.
type typeMeta struct{ apiVersion, kind string }

func (t typeMeta) group() string {
	if g, _, ok := strings.Cut(t.apiVersion, "/"); ok {
		return g
	}
	return ""
}

// objectType reads obj's apiVersion and kind; items of a typed list may
// leave both out and are then def.
func objectType(obj *yaml.Node, def typeMeta) (typeMeta, error) {
	av, k := MapGet(obj, "apiVersion"), MapGet(obj, "kind")
	if av == nil && k == nil && def.kind != "" {
		return def, nil
	}
	tm := typeMeta{MapString(obj, "apiVersion"), MapString(obj, "kind")}
	if err := typeField("apiVersion", av, tm.apiVersion); err != nil {
		return typeMeta{}, err
	}
	return tm, typeField("kind", k, tm.kind)
}

// typeField checks that apiVersion or kind is a string as kubectl reads
// it: a plain y, yes or on is a boolean to YAML 1.1.
func typeField(name string, n *yaml.Node, v string) error {
	switch {
	case v != "":
		return nil
	case n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && n.Value != "":
		return fmt.Errorf("%s: %s is a boolean to kubectl, which reads YAML 1.1; quote it", name, n.Value)
	}
	return errors.New("apiVersion and kind are required")
}

// findPodsIn finds the Pods of obj. Items of a typed list may leave out
// apiVersion and kind (the API does): def is then what they are.
func findPodsIn(obj *yaml.Node, prefix, ptr string, def typeMeta) ([]PodSpot, error) {
	obj = Deref(obj)
	if obj.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%snot a Kubernetes object: got %s, want a mapping", prefix, KindName(obj))
	}
	tm, err := objectType(obj, def)
	if err != nil {
		return nil, fmt.Errorf("%snot a Kubernetes object: %w", prefix, err)
	}
	apiVersion, kind, group := tm.apiVersion, tm.kind, tm.group()
	meta := MapGet(obj, "metadata")
	what := kind + " " + objectName(meta)
	if group == "" && kind == "List" {
		return findPodsInList(obj, prefix, typeMeta{})
	}
	// Typed lists as the API returns them (PodList, DeploymentList, ...).
	if items := MapGet(obj, "items"); strings.HasSuffix(kind, "List") && items != nil && items.Kind == yaml.SequenceNode {
		return findPodsInList(obj, prefix, typeMeta{apiVersion, strings.TrimSuffix(kind, "List")})
	}
	path, ok := templatePaths[groupKind{group, kind}]
	if !ok {
		if at, found := foreignTemplate(obj, "", 0); found {
			return []PodSpot{{What: prefixed(prefix, what), Object: obj, item: prefix, pointer: ptr, Foreign: JoinPath(at, "spec")}}, nil
		}
		return nil, nil
	}
	spot := PodSpot{What: what, Holder: obj, Object: obj, item: prefix, IsPod: path == nil, Path: strings.Join(path, "."),
		pointer: ptr + pointer(path), Namespace: MapString(meta, "namespace")}
	if ref := MapGet(MapGet(obj, "spec"), "workloadRef"); kind == "Rollout" && ref != nil && MapGet(MapGet(obj, "spec"), "template") == nil {
		// An Argo Rollout may take its Pods from a Deployment's template
		// instead of carrying one: that Deployment is where graft injects.
		spot.Holder, spot.What = nil, prefixed(prefix, what)
		spot.NoTemplate = fmt.Sprintf("no Pod template: spec.workloadRef takes the Pods of %s %s, injected where it is defined", orNone(MapString(ref, "kind")), orNone(MapString(ref, "name")))
		return []PodSpot{spot}, nil
	}
	for i, key := range path {
		next := MapGet(spot.Holder, key)
		if next == nil {
			return nil, fmt.Errorf("%s%s: no Pod template at %s", prefix, what, strings.Join(path[:i+1], "."))
		}
		if next.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s%s: %s is %s, want a mapping", prefix, what, strings.Join(path[:i+1], "."), KindName(next))
		}
		spot.Holder = next
	}
	specPath := JoinPath(spot.Path, "spec")
	switch spec := MapGet(spot.Holder, "spec"); {
	case spec == nil:
		return nil, fmt.Errorf("%s%s: %s is missing", prefix, what, specPath)
	case spec.Kind != yaml.MappingNode:
		return nil, fmt.Errorf("%s%s: %s is %s, want a mapping", prefix, what, specPath, KindName(spec))
	}
	// A template may leave metadata out or null; a Pod needs it for its name.
	switch m := MapGet(spot.Holder, "metadata"); {
	case m == nil && spot.IsPod:
		return nil, fmt.Errorf("%s%s: metadata is missing", prefix, what)
	case m != nil && m.Kind != yaml.MappingNode && (spot.IsPod || m.ShortTag() != "!!null"):
		return nil, fmt.Errorf("%s%s: %s is %s, want a mapping", prefix, what, JoinPath(spot.Path, "metadata"), KindName(m))
	}
	spot.What = prefixed(prefix, what)
	return []PodSpot{spot}, nil
}

func findPodsInList(list *yaml.Node, prefix string, def typeMeta) ([]PodSpot, error) {
	if prefix != "" {
		return nil, errors.New(prefix + "a List inside a List")
	}
	items := MapGet(list, "items")
	if items == nil || items.ShortTag() == "!!null" {
		return nil, nil
	}
	if items.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: items is %s, want a list", MapString(list, "kind"), KindName(items))
	}
	var spots []PodSpot
	for i, it := range items.Content {
		s, err := findPodsIn(it, fmt.Sprintf("items[%d]: ", i), fmt.Sprintf("/items/%d", i), def)
		if err != nil {
			return nil, err
		}
		spots = append(spots, s...)
	}
	return spots, nil
}

func prefixed(prefix, what string) string {
	if prefix == "" {
		return what
	}
	return strings.TrimSuffix(prefix, ": ") + " " + what
}

func objectName(meta *yaml.Node) string {
	if n := MapString(meta, "name"); n != "" {
		return n
	}
	if n := MapString(meta, "generateName"); n != "" {
		return n
	}
	return "(unnamed)"
}

func JoinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// foreignTemplate finds a Pod template (or a Pod spec) in an object of a
// kind graft does not inject into: a mapping whose spec has containers.
// It returns the template's path ("" for the object itself).
func foreignTemplate(n *yaml.Node, path string, depth int) (string, bool) {
	if n.Kind != yaml.MappingNode || depth > 6 {
		return "", false
	}
	if c := MapGet(MapGet(n, "spec"), "containers"); c != nil && c.Kind == yaml.SequenceNode {
		return path, true
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if at, ok := foreignTemplate(Deref(n.Content[i+1]), JoinPath(path, n.Content[i].Value), depth+1); ok {
			return at, true
		}
	}
	return "", false
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
