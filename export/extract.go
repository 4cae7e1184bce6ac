package export

import (
	"fmt"
	"slices"
)

// fragmentKeys are the keys a fragment may have (templates' fragmentDoc).
var fragmentKeys = []string{"containers", "initContainers", "volumes", "imagePullSecrets", "annotations", "labels", "appContainers"}

type listSpec struct {
	kind listKind
	in   node
	what string
}

// extract reads a compiled fragment's lists and maps.
func (t *compiler) extract(n node) (fragment, error) {
	var f fragment
	if n == nil {
		return f, nil // an empty fragment
	}
	doc, ok := n.(object)
	if !ok {
		return f, t.refuse("the fragment is not a YAML map")
	}
	for _, k := range doc.keys {
		if !slices.Contains(fragmentKeys, k) {
			return f, t.refuse("unknown fragment key %q", k)
		}
	}
	lists := []listSpec{
		{listContainers, doc.vals["containers"], "containers"},
		{listInits, doc.vals["initContainers"], "initContainers"},
		{listVolumes, doc.vals["volumes"], "volumes"},
		{listSecrets, doc.vals["imagePullSecrets"], "imagePullSecrets"},
	}
	if app, ok := doc.vals["appContainers"].(object); ok {
		lists = append(lists,
			listSpec{listEnv, app.vals["env"], "appContainers.env"},
			listSpec{listMounts, app.vals["volumeMounts"], "appContainers.volumeMounts"})
	}
	for _, l := range lists {
		els, err := t.elements(l.in, l.what, l.kind == listMounts)
		if err != nil {
			return f, err
		}
		f.lists[l.kind] = els
	}
	var err error
	if f.annotations, err = t.entries(doc.vals["annotations"], "annotations"); err != nil {
		return f, err
	}
	if f.labels, err = t.entries(doc.vals["labels"], "labels"); err != nil {
		return f, err
	}
	return f, nil
}

func (t *compiler) elements(n node, what string, mount bool) ([]element, error) {
	if n == nil {
		return nil, nil
	}
	a, ok := n.(array)
	if !ok {
		return nil, t.refuse("%s is not a list", what)
	}
	var out []element
	for i, e := range a {
		o, ok := e.(object)
		if !ok {
			return nil, t.refuse("%s[%d] is not a map", what, i)
		}
		name, ok := o.vals["name"].(string)
		if !ok || name == "" {
			return nil, t.refuse("%s[%d]: the name must be fixed text, not built from parameters", what, i)
		}
		el := element{name: name, val: o}
		if mount {
			switch mp := o.vals["mountPath"].(type) {
			case string, str:
				el.mountPath = mp
			default:
				return nil, t.refuse("%s[%d]: mountPath must be a string", what, i)
			}
		}
		out = append(out, el)
	}
	return out, nil
}

func (t *compiler) entries(n node, what string) ([]entry, error) {
	if n == nil {
		return nil, nil
	}
	o, ok := n.(object)
	if !ok {
		return nil, t.refuse("%s is not a map", what)
	}
	var out []entry
	for _, k := range o.keys {
		switch v := o.vals[k].(type) {
		case string, str:
			out = append(out, entry{key: k, val: v})
		default:
			return nil, t.refuse("%s: the value of %q must be a string, not %s", what, k, fmt.Sprintf("%T", v))
		}
	}
	return out, nil
}
