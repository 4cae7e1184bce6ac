package main

import (
	"errors"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// podSpot is a Pod inside a document: the document itself (kind Pod), or
// the Pod template of a workload.
type podSpot struct {
	doc  *document
	what string // "Deployment web", for messages
	// holder is the Pod mapping itself, or the template mapping (metadata
	// and spec) of a workload.
	holder    *yaml.Node
	isPod     bool
	path      string // where holder is, for messages: "spec.template"
	pointer   string // where holder is in the document, as a JSON Pointer
	namespace string // the object's metadata.namespace, if any
	// object is the workload's own mapping (the Pod itself for a Pod).
	object *yaml.Node
	item   string // "items[3]: " for an item of a List
	// holder is nil for an object whose Pods graft does not inject here:
	// noTemplate says why a kind that carries Pods has no template (an
	// Argo Rollout naming a workload); foreign is where an object of a kind
	// graft does not know has a Pod spec (spec.template.spec).
	noTemplate, foreign string
}

// ref names the object as kubectl does, kind/name, after the List item
// it is, if any.
func (s podSpot) ref() string {
	return prefixed(s.item, mapString(s.object, "kind")+"/"+objectName(mapGet(s.object, "metadata")))
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

// findPods returns the Pods of doc, in order. A v1 List is searched item
// by item. Kinds without Pods give none.
func findPods(doc *document) ([]podSpot, error) {
	root := doc.root()
	if root == nil {
		return nil, nil
	}
	spots, err := findPodsIn(root, "", "", typeMeta{})
	for i := range spots {
		spots[i].doc = doc
	}
	return spots, err
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
	av, k := mapGet(obj, "apiVersion"), mapGet(obj, "kind")
	if av == nil && k == nil && def.kind != "" {
		return def, nil
	}
	tm := typeMeta{mapString(obj, "apiVersion"), mapString(obj, "kind")}
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
func findPodsIn(obj *yaml.Node, prefix, ptr string, def typeMeta) ([]podSpot, error) {
	obj = deref(obj)
	if obj.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%snot a Kubernetes object: got %s, want a mapping", prefix, kindName(obj))
	}
	tm, err := objectType(obj, def)
	if err != nil {
		return nil, fmt.Errorf("%snot a Kubernetes object: %w", prefix, err)
	}
	apiVersion, kind, group := tm.apiVersion, tm.kind, tm.group()
	meta := mapGet(obj, "metadata")
	what := kind + " " + objectName(meta)
	if group == "" && kind == "List" {
		return findPodsInList(obj, prefix, typeMeta{})
	}
	// Typed lists as the API returns them (PodList, DeploymentList, ...).
	if items := mapGet(obj, "items"); strings.HasSuffix(kind, "List") && items != nil && items.Kind == yaml.SequenceNode {
		return findPodsInList(obj, prefix, typeMeta{apiVersion, strings.TrimSuffix(kind, "List")})
	}
	path, ok := templatePaths[groupKind{group, kind}]
	if !ok {
		if at, found := foreignTemplate(obj, "", 0); found {
			return []podSpot{{what: prefixed(prefix, what), object: obj, item: prefix, pointer: ptr, foreign: joinPath(at, "spec")}}, nil
		}
		return nil, nil
	}
	spot := podSpot{what: what, holder: obj, object: obj, item: prefix, isPod: path == nil, path: strings.Join(path, "."),
		pointer: ptr + pointer(path), namespace: mapString(meta, "namespace")}
	if ref := mapGet(mapGet(obj, "spec"), "workloadRef"); kind == "Rollout" && ref != nil && mapGet(mapGet(obj, "spec"), "template") == nil {
		// An Argo Rollout may take its Pods from a Deployment's template
		// instead of carrying one: that Deployment is where graft injects.
		spot.holder, spot.what = nil, prefixed(prefix, what)
		spot.noTemplate = fmt.Sprintf("no Pod template: spec.workloadRef takes the Pods of %s %s, injected where it is defined", orNone(mapString(ref, "kind")), orNone(mapString(ref, "name")))
		return []podSpot{spot}, nil
	}
	for i, key := range path {
		next := mapGet(spot.holder, key)
		if next == nil {
			return nil, fmt.Errorf("%s%s: no Pod template at %s", prefix, what, strings.Join(path[:i+1], "."))
		}
		if next.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s%s: %s is %s, want a mapping", prefix, what, strings.Join(path[:i+1], "."), kindName(next))
		}
		spot.holder = next
	}
	specPath := joinPath(spot.path, "spec")
	switch spec := mapGet(spot.holder, "spec"); {
	case spec == nil:
		return nil, fmt.Errorf("%s%s: %s is missing", prefix, what, specPath)
	case spec.Kind != yaml.MappingNode:
		return nil, fmt.Errorf("%s%s: %s is %s, want a mapping", prefix, what, specPath, kindName(spec))
	}
	// A template may leave metadata out or null; a Pod needs it for its name.
	switch m := mapGet(spot.holder, "metadata"); {
	case m == nil && spot.isPod:
		return nil, fmt.Errorf("%s%s: metadata is missing", prefix, what)
	case m != nil && m.Kind != yaml.MappingNode && (spot.isPod || m.ShortTag() != "!!null"):
		return nil, fmt.Errorf("%s%s: %s is %s, want a mapping", prefix, what, joinPath(spot.path, "metadata"), kindName(m))
	}
	spot.what = prefixed(prefix, what)
	return []podSpot{spot}, nil
}

func findPodsInList(list *yaml.Node, prefix string, def typeMeta) ([]podSpot, error) {
	if prefix != "" {
		return nil, errors.New(prefix + "a List inside a List")
	}
	items := mapGet(list, "items")
	if items == nil || items.ShortTag() == "!!null" {
		return nil, nil
	}
	if items.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: items is %s, want a list", mapString(list, "kind"), kindName(items))
	}
	var spots []podSpot
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
	if n := mapString(meta, "name"); n != "" {
		return n
	}
	if n := mapString(meta, "generateName"); n != "" {
		return n
	}
	return "(unnamed)"
}

func joinPath(path, key string) string {
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
	if c := mapGet(mapGet(n, "spec"), "containers"); c != nil && c.Kind == yaml.SequenceNode {
		return path, true
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if at, ok := foreignTemplate(deref(n.Content[i+1]), joinPath(path, n.Content[i].Value), depth+1); ok {
			return at, true
		}
	}
	return "", false
}
