package manifest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// The splicer writes a JSONPatch into a YAML document's own text: what an
// op adds is rendered in the layout of the collection it joins and
// inserted at a position found from the yaml.v3 node tree, so everything
// else (comments, quoting, list style, line breaks, the final newline)
// stays byte for byte, and a reviewer's diff shows only the additions.
//
// It handles what graft's engine emits: add (a map key, a list element)
// and replace (a scalar, a null, a flow collection). Anything else (a
// remove, a replace of a block collection, a document with aliases, whose
// edit could show up wherever the alias points) is errNoSplice, and the
// caller re-encodes the document instead. Callers also check that the
// spliced text means exactly the patched document.

// PatchOp is one RFC 6902 operation.
type PatchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// spliceOps applies ops to the document text, each on the text the ones
// before it left. Consecutive adds of keys to one mapping (the
// annotations a template sets) are written as one insertion.
func spliceOps(text []byte, ops []PatchOp) ([]byte, error) {
	return newSpliceRun().apply(text, nil, ops)
}

// spliceRun is what the splicing of one document (or of a List's
// items) keeps between ops: the lines rendered for each value, the same
// for every Pod of a List.
type spliceRun struct {
	rendered map[string][]string
	// reparse reads the text anew before every op instead of following
	// the edits in the tree: what tests compare the tracking with.
	reparse bool
}

func newSpliceRun() *spliceRun { return &spliceRun{rendered: map[string][]string{}} }

// apply applies ops to text, whose tree is tree if known (nil: read it).
// The tree follows each edit (its nodes moved by the lines inserted)
// until an op needs a collection an edit changed: then the text is read
// anew. Reading a Pod's text once per op was most of graft inject's time.
func (r *spliceRun) apply(text []byte, tree *parsedText, ops []PatchOp) ([]byte, error) {
	for len(ops) > 0 {
		group := ops[:addsToOneParent(ops)]
		if tree == nil || r.reparse || tree.stale(group[0].Path) {
			var err error
			if tree, err = parseText(text); err != nil {
				return nil, fmt.Errorf("%s %s: %w", ops[0].Op, ops[0].Path, err)
			}
		}
		e, n, changed, err := r.spliceOp(tree, group)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", ops[0].Op, ops[0].Path, err)
		}
		text = e.apply(text)
		tree = tree.follow(e, changed, text)
		ops = ops[n:]
	}
	return text, nil
}

// addsToOneParent counts the adds at the start of ops under one parent.
func addsToOneParent(ops []PatchOp) int {
	parent := func(p string) string { return p[:strings.LastIndexByte(p, '/')+1] }
	n := 1
	for n < len(ops) && ops[0].Op == "add" && ops[n].Op == "add" && ops[n].Path != "" && ops[0].Path != "" &&
		parent(ops[n].Path) == parent(ops[0].Path) {
		n++
	}
	return n
}

// textEdit replaces b[start:end] with repl.
type textEdit struct {
	start, end int
	repl       string
}

func (e textEdit) apply(b []byte) []byte {
	out := make([]byte, 0, len(b)-(e.end-e.start)+len(e.repl))
	out = append(out, b[:e.start]...)
	out = append(out, e.repl...)
	return append(out, b[e.end:]...)
}

type splicer struct {
	t    *yamlText
	root *yaml.Node
	run  *spliceRun
}

// parseText reads text, one YAML document, for splicing.
func parseText(text []byte) (*parsedText, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, fmt.Errorf("%w: the text does not parse alone: %w", errNoSplice, err)
	}
	if len(doc.Content) != 1 {
		return nil, noSplice("an empty document")
	}
	if hasAliases(&doc) {
		return nil, noSplice("the document uses YAML aliases")
	}
	return &parsedText{t: newYAMLText(text), root: doc.Content[0]}, nil
}

// spliceOp computes the edit of the first op of group, or of all of them
// if they add new keys to one block mapping, and says how many it
// applied and which collection it changed. The ops of group share their
// parent.
func (r *spliceRun) spliceOp(tree *parsedText, group []PatchOp) (e textEdit, n int, changed *yaml.Node, err error) {
	op := group[0]
	if op.Op != "add" && op.Op != "replace" {
		return e, 0, nil, noSplice("op %q", op.Op)
	}
	tokens, err := pointerTokens(op.Path)
	if err != nil {
		return e, 0, nil, err
	}
	if len(tokens) == 0 {
		return e, 0, nil, noSplice("an op on the whole document")
	}
	s := splicer{t: tree.t, root: tree.root, run: r}
	// path holds the nodes from the root to the op's parent.
	path := []*yaml.Node{s.root}
	for _, tok := range tokens[:len(tokens)-1] {
		c := childNode(path[len(path)-1], tok)
		if c == nil {
			return e, 0, nil, fmt.Errorf("no %q in the document", tok)
		}
		path = append(path, c)
	}
	parent := path[len(path)-1]
	switch i := firstFlow(path); {
	case len(group) > 1 && s.newKeys(path, group):
		e, err = s.addEntries(parent, group)
		return e, len(group), parent, err
	case i >= 0:
		// Every op of the group is under the flow collection: it is
		// written anew once, with all of them applied.
		rel := make([]PatchOp, len(group))
		for j, g := range group {
			toks, err := pointerTokens(g.Path)
			if err != nil {
				return e, 0, nil, err
			}
			rel[j] = PatchOp{Op: g.Op, Path: pointer(toks[i:]), Value: g.Value}
		}
		e, err = s.rewriteFlow(path, i, rel)
		return e, len(group), path[i], err
	}
	e, err = s.edit(path, tokens[len(tokens)-1], op.Op, op.Value)
	if op.Op == "replace" {
		// The value replaced is what changed (a flow collection or a
		// scalar); the parent holds as many entries as before.
		changed = childNode(parent, tokens[len(tokens)-1])
	} else {
		changed = parent
	}
	return e, 1, changed, err
}

// lines renders the value raw, an op's JSON, with render, once per
// value, layout and indentation in a run.
func (s *splicer) lines(what string, l layout, indent int, raw json.RawMessage, render func(*yaml.Node) ([]string, error)) ([]string, error) {
	key := fmt.Sprintf("%s|%d|%d|%d|%d|%s", what, l.mapIndent, l.seqIndent, l.itemOffset, indent, raw)
	if out, ok := s.run.rendered[key]; ok {
		return out, nil
	}
	value, err := jsonNode(raw)
	if err != nil {
		return nil, err
	}
	out, err := render(value)
	if err != nil {
		return nil, err
	}
	s.run.rendered[key] = out
	return out, nil
}

// edit is an op whose parent is a block collection.
func (s *splicer) edit(path []*yaml.Node, last, op string, value json.RawMessage) (textEdit, error) {
	parent := path[len(path)-1]
	switch parent.Kind {
	case yaml.MappingNode:
		k, cur := mapEntry(parent, last)
		if k == nil {
			if op == "replace" {
				return textEdit{}, fmt.Errorf("no %q to replace", last)
			}
			return s.addEntry(parent, last, value)
		}
		v, err := jsonNode(value)
		if err != nil {
			return textEdit{}, err
		}
		return s.replace(cur, parent, k, v)
	case yaml.SequenceNode:
		idx := len(parent.Content)
		if last != "-" || op != "add" {
			var err error
			if idx, err = strconv.Atoi(last); err != nil || idx < 0 || idx > len(parent.Content) || (op == "replace" && idx == len(parent.Content)) {
				return textEdit{}, fmt.Errorf("index %q out of range", last)
			}
		}
		if op == "add" {
			return s.addItem(parent, idx, value)
		}
		v, err := jsonNode(value)
		if err != nil {
			return textEdit{}, err
		}
		return s.replace(parent.Content[idx], parent, nil, v)
	}
	return textEdit{}, fmt.Errorf("%s is not a collection", KindName(parent))
}

// addEntry adds key: value to the block mapping m: after its last entry,
// or, for a Pod template's metadata, where it usually is, before spec.
func (s *splicer) addEntry(m *yaml.Node, key string, value json.RawMessage) (textEdit, error) {
	first := m.Content[0]
	lines, err := s.entryLines(layoutNear(s.t, m, s.root), key, value, first.Column-1)
	if err != nil {
		return textEdit{}, err
	}
	if sk, _ := mapEntry(m, "spec"); key == "metadata" && sk != nil {
		if ind, ok := s.t.firstOnLine(sk); ok && ind == first.Column-1 {
			return s.insertBefore(s.t.headStart(sk.Line-1, 0), lines), nil
		}
	}
	return s.appendEntries(m, lines), nil
}

// entryLines renders "key: value" with the key at indent.
func (s *splicer) entryLines(l layout, key string, value json.RawMessage, indent int) ([]string, error) {
	return s.lines("entry "+strconv.Quote(key), l, indent, value, func(v *yaml.Node) ([]string, error) {
		return l.entryLines(strNode(key), v, indent)
	})
}

// newKeys reports whether the adds are of distinct new keys to the block
// mapping at the end of path (and none a template's metadata, which
// goes elsewhere).
func (s *splicer) newKeys(path []*yaml.Node, adds []PatchOp) bool {
	m := path[len(path)-1]
	if firstFlow(path) >= 0 || m.Kind != yaml.MappingNode || len(m.Content) == 0 {
		return false
	}
	seen := map[string]bool{}
	for _, op := range adds {
		toks, err := pointerTokens(op.Path)
		if err != nil || len(toks) == 0 {
			return false
		}
		key := toks[len(toks)-1]
		if k, _ := mapEntry(m, key); k != nil || seen[key] || key == "metadata" {
			return false
		}
		seen[key] = true
	}
	return true
}

// addEntries adds the keys of several adds to the block mapping m, in one
// insertion after its last entry.
func (s *splicer) addEntries(m *yaml.Node, adds []PatchOp) (textEdit, error) {
	l := layoutNear(s.t, m, s.root)
	var lines []string
	for _, op := range adds {
		toks, err := pointerTokens(op.Path)
		if err != nil {
			return textEdit{}, err
		}
		entry, err := s.entryLines(l, toks[len(toks)-1], op.Value, m.Content[0].Column-1)
		if err != nil {
			return textEdit{}, err
		}
		lines = append(lines, entry...)
	}
	return s.appendEntries(m, lines), nil
}

// appendEntries inserts lines after the last entry of the block mapping m.
func (s *splicer) appendEntries(m *yaml.Node, lines []string) textEdit {
	last := m.Content[len(m.Content)-2]
	return s.insertAfter(s.t.extentEnd(last.Line-1, last.Column, false), lines)
}

// addItem inserts value at idx of the block sequence seq.
func (s *splicer) addItem(seq *yaml.Node, idx int, value json.RawMessage) (textEdit, error) {
	dash := seq.Column - 1
	l := layoutNear(s.t, seq, s.root)
	lines, err := s.lines("item", l, dash, value, func(v *yaml.Node) ([]string, error) {
		return l.itemLines(v, dash)
	})
	if err != nil {
		return textEdit{}, err
	}
	if idx < len(seq.Content) {
		it := seq.Content[idx]
		if err := s.checkDash(seq, it); err != nil {
			return textEdit{}, err
		}
		return s.insertBefore(s.t.headStart(it.Line-1, 0), lines), nil
	}
	last := seq.Content[len(seq.Content)-1]
	if err := s.checkDash(seq, last); err != nil {
		return textEdit{}, err
	}
	return s.insertAfter(s.t.extentEnd(last.Line-1, seq.Column, true), lines), nil
}

// checkDash checks that item starts on its own "- " line of seq, where
// the item's position then says where the entry is.
func (s *splicer) checkDash(seq, item *yaml.Node) error {
	l := s.t.line(item.Line - 1)
	ind, rest := indentation(l)
	if ind != seq.Column-1 || !isDash(rest) || strings.TrimSpace(string(l[:item.Column-1])) != "-" {
		return noSplice("line %d: item not on its own \"- \" line", item.Line)
	}
	return nil
}

// replace writes value in place of cur, the value of key k in mapping
// parent, or an item of sequence parent, or the root (parent nil).
func (s *splicer) replace(cur, parent, k *yaml.Node, value *yaml.Node) (textEdit, error) {
	start, end, err := s.t.nodeSpan(cur)
	if err != nil {
		return textEdit{}, err
	}
	l := layoutNear(s.t, parent, s.root)
	if k != nil {
		if isInline(value) {
			lines, err := inlineLines(value, k.Column-1)
			if err != nil {
				return textEdit{}, err
			}
			repl := strings.Join(lines, s.t.nl)
			if start == end && start > 0 && s.t.b[start-1] == ':' {
				repl = " " + repl
			}
			return textEdit{start, end, repl}, nil
		}
		// key: {...} becomes key: and the block below it; a comment after
		// the value stays on the key's line.
		lines, err := l.blockLines(value, k.Column-1)
		if err != nil {
			return textEdit{}, err
		}
		for start > 0 && (s.t.b[start-1] == ' ' || s.t.b[start-1] == '\t') {
			start--
		}
		return s.replaceRest(start, end, "", lines), nil
	}
	// An item or the root: the first line where the old value started,
	// the others below it at its column.
	indent := cur.Column - 1
	lines, err := l.valueLines(value, indent)
	if err != nil {
		return textEdit{}, err
	}
	return s.replaceRest(start, end, lines[0], lines[1:]), nil
}

// replaceRest replaces b[start:end] with first, keeps the rest of end's
// line (a comment), and puts more on the lines after it.
func (s *splicer) replaceRest(start, end int, first string, more []string) textEdit {
	i := s.t.lineOf(end)
	if end > start && end == s.t.lines[i] && i > 0 {
		i-- // end is just past a line break
	}
	lineEnd := s.t.lines[i] + len(s.t.line(i))
	var b strings.Builder
	b.WriteString(first)
	b.Write(s.t.b[end:lineEnd])
	for _, l := range more {
		b.WriteString(s.t.nl)
		b.WriteString(l)
	}
	return textEdit{start, lineEnd, b.String()}
}

func (s *splicer) insertBefore(line int, lines []string) textEdit {
	off := s.t.lines[line]
	return textEdit{off, off, strings.Join(lines, s.t.nl) + s.t.nl}
}

func (s *splicer) insertAfter(line int, lines []string) textEdit {
	off := s.t.next(line)
	if !s.t.hasBreak(line) {
		// The document ends here without a final line break: keep it so.
		return textEdit{off, off, s.t.nl + strings.Join(lines, s.t.nl)}
	}
	return textEdit{off, off, strings.Join(lines, s.t.nl) + s.t.nl}
}

// rewriteFlow applies ops, relative to path[i], the outermost flow
// collection on the way to their targets, and writes that collection
// anew: in block style where the ops changed it, what did not change
// written as before.
func (s *splicer) rewriteFlow(path []*yaml.Node, i int, ops []PatchOp) (textEdit, error) {
	f := path[i]
	nv, ok, err := addedKeys(f, ops)
	if err != nil {
		return textEdit{}, err
	}
	if !ok {
		before, err := NodeJSON(f)
		if err != nil {
			return textEdit{}, err
		}
		after, err := applyOps(before, ops)
		if err != nil {
			return textEdit{}, err
		}
		if nv, err = jsonNode(after); err != nil {
			return textEdit{}, err
		}
		nv = keepOriginal(f, nv)
	}
	if i == 0 {
		return s.replace(f, nil, nil, nv)
	}
	parent := path[i-1]
	var key *yaml.Node
	if parent.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(parent.Content); j += 2 {
			if parent.Content[j+1] == f {
				key = parent.Content[j]
			}
		}
	}
	return s.replace(f, parent, key, nv)
}

// addedKeys is the flow mapping f with the keys ops add to it, when
// that is all they do (graft's labels and annotations): its entries as
// they are, then the new ones, in block style, as keepOriginal would
// make of the patched mapping. ok is false for any other ops.
func addedKeys(f *yaml.Node, ops []PatchOp) (*yaml.Node, bool, error) {
	if f.Kind != yaml.MappingNode {
		return nil, false, nil
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: slices.Clip(f.Content)}
	keepComments(out, f)
	for _, op := range ops {
		toks, err := pointerTokens(op.Path)
		if err != nil || op.Op != "add" || len(toks) != 1 {
			return nil, false, nil
		}
		if k, _ := mapEntry(out, toks[0]); k != nil {
			return nil, false, nil
		}
		v, err := jsonNode(op.Value)
		if err != nil {
			return nil, false, err
		}
		out.Content = append(out.Content, strNode(toks[0]), v)
	}
	return out, true, nil
}

func firstFlow(path []*yaml.Node) int {
	for i, n := range path {
		if n.Kind != yaml.ScalarNode && n.Style&yaml.FlowStyle != 0 {
			return i
		}
	}
	return -1
}

func childNode(n *yaml.Node, tok string) *yaml.Node {
	switch n.Kind {
	case yaml.MappingNode:
		_, v := mapEntry(n, tok)
		return v
	case yaml.SequenceNode:
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 || i >= len(n.Content) {
			return nil
		}
		return n.Content[i]
	}
	return nil
}

// pointerTokens splits an RFC 6901 JSON Pointer.
func pointerTokens(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("JSON pointer %q does not start with /", p)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		if strings.IndexByte(t, '~') >= 0 {
			toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		}
	}
	return toks, nil
}

// pointer joins tokens into a JSON Pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		if strings.ContainsAny(t, "~/") {
			t = strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
		}
		b.WriteString(t)
	}
	return b.String()
}
