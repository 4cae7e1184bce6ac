package manifest

import (
	"bytes"
	"encoding/json"
	"reflect"

	yaml "go.yaml.in/yaml/v3"
)

// keepOriginal returns updated with orig's nodes reused wherever the value
// did not change, so that the output differs from the input only where
// graft changed something: comments, quoting, anchors and number spellings
// of untouched fields stay as the user wrote them.
func keepOriginal(orig, updated *yaml.Node) *yaml.Node {
	if orig == nil || updated == nil {
		return updated
	}
	if sameValue(orig, updated) {
		return orig
	}
	o := Deref(orig)
	switch {
	case o.Kind == yaml.MappingNode && updated.Kind == yaml.MappingNode:
		out := &yaml.Node{Kind: yaml.MappingNode, Tag: updated.Tag}
		keepComments(out, orig)
		for i := 0; i+1 < len(updated.Content); i += 2 {
			k, v := updated.Content[i], updated.Content[i+1]
			if origKey, origVal := mapEntry(o, k.Value); origKey != nil {
				k, v = origKey, keepOriginal(origVal, v)
			}
			out.Content = append(out.Content, k, v)
		}
		return out
	case o.Kind == yaml.SequenceNode && updated.Kind == yaml.SequenceNode:
		out := &yaml.Node{Kind: yaml.SequenceNode, Tag: updated.Tag}
		keepComments(out, orig)
		used := make([]bool, len(o.Content))
		for i, v := range updated.Content {
			out.Content = append(out.Content, keepElement(o.Content, used, i, v))
		}
		return out
	case o.Kind == yaml.ScalarNode && updated.Kind == yaml.ScalarNode:
		keepComments(updated, orig)
	}
	return updated
}

// keepElement finds v, the element at index i, among the original elems:
// an equal unused element, or else the unused element with the same name
// (a container graft edited), or else for an unnamed one, the unused
// element at the same index (an item of a List).
func keepElement(elems []*yaml.Node, used []bool, i int, v *yaml.Node) *yaml.Node {
	for j, e := range elems {
		if !used[j] && sameValue(e, v) {
			used[j] = true
			return e
		}
	}
	name := MapString(v, "name")
	for j, e := range elems {
		if !used[j] && name != "" && MapString(e, "name") == name {
			used[j] = true
			return keepOriginal(e, v)
		}
	}
	if name == "" && i < len(elems) && !used[i] && MapString(elems[i], "name") == "" {
		used[i] = true
		return keepOriginal(elems[i], v)
	}
	return v
}

func mapEntry(m *yaml.Node, key string) (k, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

func keepComments(dst, src *yaml.Node) {
	dst.HeadComment, dst.LineComment, dst.FootComment = src.HeadComment, src.LineComment, src.FootComment
	dst.Anchor = src.Anchor
}

// sameValue reports whether a and b hold the same JSON value.
func sameValue(a, b *yaml.Node) bool {
	ja, err := NodeJSON(a)
	if err != nil {
		return false
	}
	jb, err := NodeJSON(b)
	if err != nil {
		return false
	}
	if bytes.Equal(ja, jb) {
		return true
	}
	va, ok := decodeJSONValue(ja)
	if !ok {
		return false
	}
	vb, ok := decodeJSONValue(jb)
	return ok && reflect.DeepEqual(va, vb)
}

func decodeJSONValue(data []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}
