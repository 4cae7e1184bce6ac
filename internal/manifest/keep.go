package manifest

import (
	"bytes"
	"encoding/json"

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
		m := elementMatcher{elems: o.Content, used: make([]bool, len(o.Content))}
		for i, v := range updated.Content {
			out.Content = append(out.Content, m.match(i, v))
		}
		return out
	case o.Kind == yaml.ScalarNode && updated.Kind == yaml.ScalarNode:
		keepComments(updated, orig)
	}
	return updated
}

// elementMatcher finds the updated elements of a sequence among the
// original ones. Each lookup costs the element's size, not the list's: a
// List of n items, each compared with every other, was n² (issue 22).
type elementMatcher struct {
	elems []*yaml.Node
	used  []bool
	// byValue and byName index the original elements by their value (as
	// canonical JSON) and by their name field; built on first need.
	byValue map[string][]int
	byName  map[string][]int
}

// match finds v, the element at index i, among the original elements:
// the one at i if equal, else an equal unused one, else the unused one
// with the same name (a container graft edited), else for an unnamed
// one, the unused one at the same index (an item of a List). Failing
// all, v is new.
func (m *elementMatcher) match(i int, v *yaml.Node) *yaml.Node {
	if i < len(m.elems) && !m.used[i] && sameValue(m.elems[i], v) {
		m.used[i] = true
		return m.elems[i]
	}
	if key, ok := canonicalJSON(v); ok {
		if m.byValue == nil {
			m.byValue = map[string][]int{}
			for j, e := range m.elems {
				if k, ok := canonicalJSON(e); ok {
					m.byValue[k] = append(m.byValue[k], j)
				}
			}
		}
		if j, ok := m.take(m.byValue[key]); ok {
			return m.elems[j]
		}
	}
	name := MapString(v, "name")
	if name != "" {
		if m.byName == nil {
			m.byName = map[string][]int{}
			for j, e := range m.elems {
				if n := MapString(e, "name"); n != "" {
					m.byName[n] = append(m.byName[n], j)
				}
			}
		}
		if j, ok := m.take(m.byName[name]); ok {
			return keepOriginal(m.elems[j], v)
		}
	}
	if name == "" && i < len(m.elems) && !m.used[i] && MapString(m.elems[i], "name") == "" {
		m.used[i] = true
		return keepOriginal(m.elems[i], v)
	}
	return v
}

// take marks and returns the first unused index of candidates.
func (m *elementMatcher) take(candidates []int) (int, bool) {
	for _, j := range candidates {
		if !m.used[j] {
			m.used[j] = true
			return j, true
		}
	}
	return 0, false
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
	ca, ok := canonical(ja)
	if !ok {
		return false
	}
	cb, ok := canonical(jb)
	return ok && ca == cb
}

// canonicalJSON is n's value as canonical JSON: keys sorted, numbers as
// written, so that equal values have equal text.
func canonicalJSON(n *yaml.Node) (string, bool) {
	js, err := NodeJSON(n)
	if err != nil {
		return "", false
	}
	return canonical(js)
}

func canonical(js []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false
	}
	out, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(out), true
}
