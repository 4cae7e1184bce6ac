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
	namespace string // the object's metadata.namespace, if any
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
}

// findPods returns the Pods of doc, in order. A v1 List is searched item
// by item. Kinds without Pods give none.
func findPods(doc *document) ([]podSpot, error) {
	root := doc.root()
	if root == nil {
		return nil, nil
	}
	spots, err := findPodsIn(root, "", typeMeta{})
	for i := range spots {
		spots[i].doc = doc
	}
	return spots, err
}

// typeMeta is an object's apiVersion and kind.
type typeMeta struct{ apiVersion, kind string }

// findPodsIn finds the Pods of obj. Items of a typed list may leave out
// apiVersion and kind (the API does): def is then what they are.
func findPodsIn(obj *yaml.Node, prefix string, def typeMeta) ([]podSpot, error) {
	obj = deref(obj)
	if obj.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%snot a Kubernetes object: got %s, want a mapping", prefix, kindName(obj))
	}
	apiVersion, kind := mapString(obj, "apiVersion"), mapString(obj, "kind")
	if apiVersion == "" && kind == "" {
		apiVersion, kind = def.apiVersion, def.kind
	}
	if apiVersion == "" || kind == "" {
		return nil, fmt.Errorf("%snot a Kubernetes object: apiVersion and kind are required", prefix)
	}
	group, _, _ := strings.Cut(apiVersion, "/")
	if !strings.Contains(apiVersion, "/") {
		group = ""
	}
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
		return nil, nil
	}
	spot := podSpot{what: what, holder: obj, isPod: path == nil, path: strings.Join(path, "."), namespace: mapString(meta, "namespace")}
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
		s, err := findPodsIn(it, fmt.Sprintf("items[%d]: ", i), def)
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
