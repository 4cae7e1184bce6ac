package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	yaml "go.yaml.in/yaml/v3"
)

// applyOps applies RFC 6902 ops to a JSON document with the patch library
// the API server uses.
func applyOps(doc []byte, ops []PatchOp) ([]byte, error) {
	p, err := jsonpatch.DecodePatch(patchJSON(ops))
	if err != nil {
		return nil, fmt.Errorf("engine patch: %w", err)
	}
	out, err := p.Apply(doc)
	if err != nil {
		return nil, fmt.Errorf("engine patch does not apply: %w", err)
	}
	return out, nil
}

// patchJSON writes ops as an RFC 6902 patch. (json.Marshal would check
// and compact every value, which the patch's decoder does again.)
func patchJSON(ops []PatchOp) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, op := range ops {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"op":`)
		appendJSONString(&b, op.Op)
		b.WriteString(`,"path":`)
		appendJSONString(&b, op.Path)
		if op.From != "" {
			b.WriteString(`,"from":`)
			appendJSONString(&b, op.From)
		}
		if len(op.Value) > 0 {
			b.WriteString(`,"value":`)
			b.Write(op.Value)
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.Bytes()
}

// DocumentOps decodes the engine's patch of the Pod at s (RFC 6902 JSON)
// into ops on s's document.
func (s PodSpot) DocumentOps(podPatch []byte) ([]PatchOp, error) {
	var podOps []PatchOp
	if err := json.Unmarshal(podPatch, &podOps); err != nil {
		return nil, fmt.Errorf("engine patch: %w", err)
	}
	return objectOps(s, podOps)
}

// objectOps turns the engine's patch of the Pod at spot into ops on the
// spot's document: paths under the Pod template's pointer, and the
// template's metadata created by the first op that needs it (the engine
// saw the template as a Pod, which always has metadata).
func objectOps(spot PodSpot, podOps []PatchOp) ([]PatchOp, error) {
	out := make([]PatchOp, 0, len(podOps))
	meta := MapGet(spot.Holder, "metadata")
	hasMeta := spot.IsPod || (meta != nil && meta.Kind == yaml.MappingNode)
	for _, op := range podOps {
		path := op.Path
		op.Path = spot.pointer + path
		if op.From != "" {
			op.From = spot.pointer + op.From
		}
		if rest, ok := strings.CutPrefix(path, "/metadata/"); ok && !hasMeta {
			toks, err := pointerTokens("/" + rest)
			if err != nil || op.Op != "add" || len(toks) != 1 {
				return nil, fmt.Errorf("engine patch: %s %s on a template without metadata", op.Op, path)
			}
			var v bytes.Buffer
			v.WriteByte('{')
			appendJSONString(&v, toks[0])
			v.WriteByte(':')
			v.Write(op.Value)
			v.WriteByte('}')
			op = PatchOp{Op: "add", Path: spot.pointer + "/metadata", Value: v.Bytes()}
		}
		if strings.HasPrefix(path, "/metadata") {
			hasMeta = true
		}
		out = append(out, op)
	}
	return out, nil
}

// Patch applies ops to d. The text gets the change spliced in; where a
// splice cannot express it, or would not mean exactly the patched
// document, the document is re-encoded, and Patch says why. Without
// keepText (the output is JSON), the text is dropped instead.
func (d *Document) Patch(ops []PatchOp, keepText bool) (reencoded string, err error) {
	before, err := NodeJSON(d.node)
	if err != nil {
		return "", err
	}
	after, err := applyOps(before, ops)
	if err != nil {
		return "", err
	}
	d.changed = true
	if keepText && d.text != nil {
		// A List's items are spliced one by one, each in its own lines;
		// any other document as a whole.
		spliced, listed, err := spliceListOps(d.text, ops)
		if !listed {
			spliced, err = spliceOps(d.text, ops)
		}
		var tree *yaml.Node
		if err == nil {
			tree, err = sameMeaning(spliced, after)
		}
		if err == nil {
			// The text is the document now, and the tree read from it to
			// check its meaning is the document's tree.
			d.text, d.node = spliced, tree
			return "", nil
		}
		reencoded = err.Error()
	}
	updated, err := jsonNode(after)
	if err != nil {
		return "", fmt.Errorf("patched document: %w", err)
	}
	if !keepText {
		// The output is JSON: the patched JSON keeps every spelling and
		// key order.
		d.text, d.node = nil, &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{updated}}
		return "", nil
	}
	// Edits are made to a tree whose untouched nodes are the originals:
	// one shared through a YAML alias would show the edit wherever the
	// alias points, so unshare them first (the meaning is the same).
	expandAliases(d.node)
	d.node = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{keepOriginal(d.Root(), updated)}}
	metadataFirst(d.Root(), ops)
	if d.text == nil {
		return reencoded, nil
	}
	text, err := reencode(d.text, d.node)
	if err != nil {
		return "", err
	}
	if _, err := sameMeaning(text, after); err != nil {
		return "", fmt.Errorf("internal: re-encoded document: %w", err)
	}
	d.text = text
	return reencoded, nil
}

// sameMeaning checks that text is one YAML document meaning the JSON
// want, and returns the document's tree as read.
func sameMeaning(text, want []byte) (*yaml.Node, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(text, &n); err != nil {
		return nil, fmt.Errorf("%w: the result does not parse: %w", errNoSplice, err)
	}
	got, err := NodeJSON(&n)
	if err != nil {
		return nil, fmt.Errorf("%w: the result: %w", errNoSplice, err)
	}
	// The same bytes, the common case, spare decoding both.
	if !bytes.Equal(got, want) && !jsonEqual(got, want) {
		return nil, fmt.Errorf("%w: the result means something else", errNoSplice)
	}
	return &n, nil
}

// jsonEqual reports whether two JSON documents hold the same value.
// (jsonpatch.Equal panics on a null inside a list.)
func jsonEqual(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// reencode writes node with the YAML encoder, in the layout of orig, the
// document's text as read: its indentation and list style, its leading
// comments and "---" line as they were, its line breaks and final newline.
func reencode(orig []byte, node *yaml.Node) ([]byte, error) {
	t := newYAMLText(orig)
	prologue := 0 // lines before the first one with content
	for prologue < t.numLines() {
		_, rest := indentation(t.line(prologue))
		if len(rest) > 0 && rest[0] != '#' && !isDocumentMarker(rest) {
			break
		}
		prologue++
	}
	root := node.Content[0]
	// The encoder would write the leading comments again: they are in the
	// prologue, kept as written.
	node.HeadComment, node.LineComment, root.HeadComment = "", "", ""
	if root.Kind == yaml.MappingNode && len(root.Content) > 0 {
		root.Content[0].HeadComment = ""
	}
	var origDoc yaml.Node
	l := layout{mapIndent: defaultIndent, seqIndent: defaultIndent}
	if yaml.Unmarshal(orig, &origDoc) == nil && len(origDoc.Content) == 1 {
		l = layoutNear(t, nil, origDoc.Content[0])
	}
	var buf bytes.Buffer
	if prologue > 0 {
		buf.Write(orig[:t.next(prologue-1)])
	}
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(l.mapIndent)
	if l.seqIndent == 0 && l.mapIndent == 2 {
		enc.CompactSeqIndent() // "- " at the key's indentation
	}
	if err := enc.Encode(node); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	out := buf.Bytes()
	if t.nl == "\r\n" {
		out = bytes.ReplaceAll(out, []byte("\r\n"), []byte("\n"))
		out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
	}
	if !bytes.HasSuffix(orig, []byte("\n")) {
		out = bytes.TrimSuffix(bytes.TrimSuffix(out, []byte("\n")), []byte("\r"))
	}
	return out, nil
}

// metadataFirst moves the metadata that ops created for a Pod template
// where it usually is, first, as the splicer puts it before spec.
func metadataFirst(root *yaml.Node, ops []PatchOp) {
	for _, op := range ops {
		toks, err := pointerTokens(op.Path)
		if err != nil || op.Op != "add" || len(toks) == 0 || toks[len(toks)-1] != "metadata" {
			continue
		}
		m := root
		for _, tok := range toks[:len(toks)-1] {
			if m = childNode(m, tok); m == nil {
				break
			}
		}
		if m == nil || m.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == "metadata" {
				kv := slices.Clone(m.Content[i : i+2])
				m.Content = slices.Insert(slices.Delete(m.Content, i, i+2), 0, kv...)
				break
			}
		}
	}
}

// PatchYAML renders ops as the lines of a YAML list, each op a mapping,
// the dashes at indent: how graft explain shows a patch.
func PatchYAML(ops []PatchOp, indent int) ([]string, error) {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, op := range ops {
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		m.Content = append(m.Content, strNode("op"), strNode(op.Op), strNode("path"), strNode(op.Path))
		if op.From != "" {
			m.Content = append(m.Content, strNode("from"), strNode(op.From))
		}
		if op.Value != nil {
			v, err := jsonNode(op.Value)
			if err != nil {
				return nil, fmt.Errorf("engine patch: %w", err)
			}
			m.Content = append(m.Content, strNode("value"), v)
		}
		seq.Content = append(seq.Content, m)
	}
	l := layout{mapIndent: defaultIndent, seqIndent: defaultIndent, itemOffset: defaultIndent}
	return l.sequenceLines(seq, indent)
}
