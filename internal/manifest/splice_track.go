package manifest

import (
	"bytes"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// parsedText is a document's text with its tree, whose nodes' lines and
// columns are where they are in the text. After an edit the tree can
// often follow without the text being read again: the nodes after the
// edit move down by the lines it inserted, and the collection it changed
// is marked, so that an op that goes through it reads the text anew.
type parsedText struct {
	t    *yamlText
	root *yaml.Node
	// changed are the collections (or values) edits changed since the
	// text was read: their entries or positions in the tree are not the
	// text's.
	changed map[*yaml.Node]bool
}

// stale reports whether the op at path (a JSON Pointer) goes through, or
// ends at, something changed since the text was read, or goes through
// somewhere the tree does not reach.
func (p *parsedText) stale(path string) bool {
	if len(p.changed) == 0 {
		return false
	}
	tokens, err := pointerTokens(path)
	if err != nil || len(tokens) == 0 {
		return true
	}
	n := p.root
	for _, tok := range tokens[:len(tokens)-1] {
		if p.changed[n] {
			return true
		}
		if n = childNode(n, tok); n == nil {
			return true
		}
	}
	if p.changed[n] {
		return true
	}
	// The target itself is missing for an add of a new key.
	target := childNode(n, tokens[len(tokens)-1])
	return target != nil && p.changed[target]
}

// follow returns the tree of text, the text after e, which changed the
// collection (or value) changed; nil when the tree cannot follow e and
// the text must be read again. It follows an insertion of whole lines,
// and a replacement from inside a line to its end whose old span held
// only the changed node: what adds and flow rewrites are.
func (p *parsedText) follow(e textEdit, changed *yaml.Node, text []byte) *parsedText {
	if changed == nil {
		return nil
	}
	old := p.t
	startLine, endLine := old.lineOf(e.start), old.lineOf(e.end)
	insertion := e.start == e.end
	lineStart := old.lines[endLine] == e.end
	switch {
	case insertion && lineStart && strings.HasSuffix(e.repl, "\n"):
		// Whole lines inserted before endLine.
	case insertion && e.end == len(old.b):
		// Appended to the text: no node is after it.
	case !insertion && e.end == old.lines[endLine]+len(old.line(endLine)):
		// Replaced up to the end of endLine, its line break kept.
	default:
		return nil
	}
	delta := strings.Count(e.repl, "\n") - bytes.Count(old.b[e.start:e.end], []byte("\n"))
	ok := true
	// shift moves the nodes after the edit; inside is true under the
	// changed node, whose old span's nodes need not be right.
	var shift func(n *yaml.Node, inside bool)
	shift = func(n *yaml.Node, inside bool) {
		if !ok {
			return
		}
		inside = inside || n == changed
		line := n.Line - 1
		switch {
		case insertion:
			if lineStart && line >= endLine {
				n.Line += delta
			}
		case line > endLine:
			n.Line += delta
		case line < startLine:
		case line == startLine:
			if off, err := old.offset(n); err != nil || (off >= e.start && !inside) {
				ok = false
			}
		case !inside:
			ok = false // a node of another collection inside the span
		}
		for _, c := range n.Content {
			shift(c, inside)
		}
	}
	shift(p.root, false)
	if !ok {
		return nil
	}
	if p.changed == nil {
		p.changed = map[*yaml.Node]bool{}
	}
	p.changed[changed] = true
	p.t = newYAMLText(text)
	return p
}
