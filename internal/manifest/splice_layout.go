package manifest

import (
	"bytes"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// layout is how a document indents its block collections, so that what
// graft adds looks like what was there.
type layout struct {
	mapIndent  int // a nested mapping's keys: the parent key's indentation + mapIndent
	seqIndent  int // a sequence under a key: "-" at the key's indentation + seqIndent (0: compact)
	itemOffset int // an item's content: the "-" column + itemOffset ("- " is 2)
}

// defaultIndent is graft's indentation where a document shows none: two
// spaces for mappings, sequences and "- ".
const defaultIndent = 2

// layoutNear learns the layout from the block collections under near,
// then from the rest of the document under root; what neither shows
// stays at the default, a sequence's indent following the mappings'.
func layoutNear(t *yamlText, near, root *yaml.Node) layout {
	found := layout{mapIndent: -1, seqIndent: -1, itemOffset: -1}
	for _, n := range []*yaml.Node{near, root} {
		if n != nil {
			learnLayout(t, n, &found, 0)
		}
	}
	if found.mapIndent <= 0 {
		found.mapIndent = defaultIndent
	}
	if found.seqIndent < 0 {
		found.seqIndent = found.mapIndent
	}
	if found.itemOffset < 2 {
		found.itemOffset = defaultIndent
	}
	return found
}

func learnLayout(t *yamlText, n *yaml.Node, l *layout, depth int) {
	if depth > maxDepth || (l.mapIndent > 0 && l.seqIndent >= 0 && l.itemOffset >= 2) {
		return
	}
	if n.Style&yaml.FlowStyle != 0 {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Style&yaml.FlowStyle == 0 && v.Line > k.Line {
				switch {
				case v.Kind == yaml.MappingNode && l.mapIndent <= 0 && v.Column > k.Column:
					l.mapIndent = v.Column - k.Column
				case v.Kind == yaml.SequenceNode && l.seqIndent < 0 && v.Column >= k.Column:
					l.seqIndent = v.Column - k.Column
				}
			}
			learnLayout(t, v, l, depth+1)
		}
	case yaml.SequenceNode:
		if len(n.Content) > 0 && l.itemOffset < 0 {
			if it := n.Content[0]; it.Line == n.Line && it.Column > n.Column {
				l.itemOffset = it.Column - n.Column
			}
		}
		for _, c := range n.Content {
			learnLayout(t, c, l, depth+1)
		}
	}
}

// isInline reports whether n is written on the line of its key or dash:
// a scalar, a flow collection or an empty one.
func isInline(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode || n.Style&yaml.FlowStyle != 0 || len(n.Content) == 0
}

// inlineLines renders an inline node. A block scalar takes more lines;
// those are indented under indent, the indentation of its key or dash.
func inlineLines(n *yaml.Node, indent int) ([]string, error) {
	if n.Kind == yaml.ScalarNode && n.Style == 0 && isPlain(n) {
		return []string{n.Value}, nil
	}
	c := *n // comments are not carried into what graft writes
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	if c.Kind != yaml.ScalarNode && len(c.Content) == 0 {
		c.Style |= yaml.FlowStyle
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&c); err != nil {
		return nil, fmt.Errorf("%w: encode: %w", errNoSplice, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("%w: encode: %w", errNoSplice, err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if c.Kind != yaml.ScalarNode && len(lines) > 1 {
		return nil, noSplice("a flow collection renders on %d lines", len(lines))
	}
	pad := strings.Repeat(" ", indent)
	for i := 1; i < len(lines); i++ {
		if lines[i] != "" {
			lines[i] = pad + lines[i]
		}
	}
	return lines, nil
}

// entryLines renders "key: value" with the key at indent.
func (l layout) entryLines(k, v *yaml.Node, indent int) ([]string, error) {
	key, err := inlineLines(k, indent)
	if err != nil {
		return nil, err
	}
	if len(key) != 1 {
		return nil, noSplice("key %q takes several lines", k.Value)
	}
	head := strings.Repeat(" ", indent) + key[0] + ":"
	if isInline(v) {
		val, err := inlineLines(v, indent)
		if err != nil {
			return nil, err
		}
		val[0] = head + " " + val[0]
		return val, nil
	}
	body, err := l.blockLines(v, indent)
	if err != nil {
		return nil, err
	}
	return append([]string{head}, body...), nil
}

// blockLines renders the non-empty block collection v held by a key at
// indent.
func (l layout) blockLines(v *yaml.Node, keyIndent int) ([]string, error) {
	if v.Kind == yaml.MappingNode {
		return l.mappingLines(v, keyIndent+l.mapIndent)
	}
	return l.sequenceLines(v, keyIndent+l.seqIndent)
}

func (l layout) mappingLines(m *yaml.Node, indent int) ([]string, error) {
	var out []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		lines, err := l.entryLines(m.Content[i], m.Content[i+1], indent)
		if err != nil {
			return nil, err
		}
		out = append(out, lines...)
	}
	return out, nil
}

func (l layout) sequenceLines(s *yaml.Node, indent int) ([]string, error) {
	var out []string
	for _, it := range s.Content {
		lines, err := l.itemLines(it, indent)
		if err != nil {
			return nil, err
		}
		out = append(out, lines...)
	}
	return out, nil
}

// itemLines renders "- value" with the dash at indent.
func (l layout) itemLines(v *yaml.Node, indent int) ([]string, error) {
	dash := strings.Repeat(" ", indent) + "-" + strings.Repeat(" ", l.itemOffset-1)
	var lines []string
	var err error
	switch {
	case isInline(v):
		if lines, err = inlineLines(v, indent); err == nil {
			lines[0] = dash + lines[0]
		}
		return lines, err
	case v.Kind == yaml.MappingNode:
		lines, err = l.mappingLines(v, indent+l.itemOffset)
	default:
		lines, err = l.sequenceLines(v, indent+l.itemOffset)
	}
	if err != nil {
		return nil, err
	}
	lines[0] = dash + lines[0][indent+l.itemOffset:]
	return lines, nil
}

// valueLines renders v as the value written at indent where a node
// started (an item's content, or a document's root): its first line
// without the indentation, the others with it.
func (l layout) valueLines(v *yaml.Node, indent int) ([]string, error) {
	var lines []string
	var err error
	switch {
	case isInline(v):
		return inlineLines(v, indent)
	case v.Kind == yaml.MappingNode:
		lines, err = l.mappingLines(v, indent)
	default:
		lines, err = l.sequenceLines(v, indent)
	}
	if err != nil {
		return nil, err
	}
	lines[0] = lines[0][indent:]
	return lines, nil
}

// isPlain reports whether the scalar n can be written as its value, plain,
// and read back the same by YAML 1.1 and 1.2 readers alike: a number,
// boolean or null as JSON spells it, or a string of common characters
// that starts with a letter and is no reserved word. (Others go through
// the YAML encoder, which knows every rule; this is the common case made
// cheap.)
func isPlain(n *yaml.Node) bool {
	v := n.Value
	switch n.Tag {
	case "!!int", "!!float", "!!bool", "!!null":
		return jsonNumberRE.MatchString(v) || v == "true" || v == "false" || v == "null"
	case "!!str":
	default:
		return false
	}
	if v == "" || !isASCIILetter(v[0]) {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isASCIILetter(c), c >= '0' && c <= '9', strings.IndexByte("-_./=@+", c) >= 0:
		case c == ':' && i+1 < len(v) && v[i+1] != ' ':
		default:
			return false
		}
	}
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null":
		return false
	}
	return true
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
