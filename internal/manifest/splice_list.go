package manifest

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// A List's items are spliced one at a time, each in its own lines: the
// splicer reads the text it edits anew for every op, so a List of n Pods
// spliced as one text costs n² (issue 22: 1,000 Pods took 101 s as a
// List, 3 s as a stream of documents). An item's lines, read alone, are
// a one-item sequence whose nodes sit at the same columns as in the
// List; ops under /items/N become ops under /0 of that sequence, and
// each item's edit reads only that item.

// listItems is a List document's block sequence of items, with the line
// range of each item's text.
type listItems struct {
	t     *yamlText
	items *yaml.Node
	// start[i] is item i's first line (its head comment, else its dash);
	// start[len(items)] is the line after the last item's extent.
	start []int
}

// findListItems locates the items of the List in text, or says why the
// items cannot be spliced one by one.
func findListItems(text []byte) (*listItems, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, noSplice("the text does not parse alone: %v", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode || doc.Content[0].Style&yaml.FlowStyle != 0 {
		return nil, noSplice("not a block mapping")
	}
	if hasAliases(&doc) {
		return nil, noSplice("the document uses YAML aliases")
	}
	_, items := mapEntry(doc.Content[0], "items")
	if items == nil || items.Kind != yaml.SequenceNode || items.Style&yaml.FlowStyle != 0 || len(items.Content) == 0 {
		return nil, noSplice("items is not a block sequence")
	}
	l := &listItems{t: newYAMLText(text), items: items, start: make([]int, 0, len(items.Content)+1)}
	s := splicer{t: l.t}
	floor := items.Line - 1
	for _, it := range items.Content {
		if err := s.checkDash(items, it); err != nil {
			return nil, err
		}
		first := l.t.headStart(it.Line-1, floor)
		l.start = append(l.start, first)
		floor = it.Line
	}
	last := items.Content[len(items.Content)-1]
	l.start = append(l.start, l.t.extentEnd(last.Line-1, items.Column, true)+1)
	return l, nil
}

// itemText is item i's lines.
func (l *listItems) itemText(i int) []byte {
	return l.t.b[l.t.lines[l.start[i]]:l.lineOffset(l.start[i+1])]
}

// lineOffset is the offset of line i, or the end of the text past the
// last line.
func (l *listItems) lineOffset(i int) int {
	if i < len(l.t.lines) {
		return l.t.lines[i]
	}
	return len(l.t.b)
}

// itemOps splits ops by the item they edit, each rewritten to a path in
// the item's lines read alone (/items/3/spec/... becomes /0/spec/...),
// in order; ok is false if an op is not inside an item (a new item, the
// List's own fields, a move between items).
func itemOps(ops []PatchOp, n int) (byItem map[int][]PatchOp, ok bool) {
	byItem = map[int][]PatchOp{}
	for _, op := range ops {
		idx, rest, ok := itemPath(op.Path, n)
		if !ok || op.From != "" {
			return nil, false
		}
		op.Path = "/0" + rest
		byItem[idx] = append(byItem[idx], op)
	}
	return byItem, true
}

// itemPath splits "/items/N/rest" into N and "/rest"; rest is not empty.
func itemPath(p string, n int) (int, string, bool) {
	rest, ok := strings.CutPrefix(p, "/items/")
	if !ok {
		return 0, "", false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || i == len(rest) || rest[i] != '/' || (rest[0] == '0' && i > 1) {
		return 0, "", false
	}
	idx, err := strconv.Atoi(rest[:i])
	if err != nil || idx >= n {
		return 0, "", false
	}
	return idx, rest[i:], true
}

// itemTree is item i's tree as its lines read alone would give it: a
// sequence holding the item, lines counted from the item's first line.
// The List's tree is taken apart to make it.
func (l *listItems) itemTree(i int, text []byte) *parsedText {
	item := l.items.Content[i]
	first := l.start[i]
	var move func(n *yaml.Node)
	move = func(n *yaml.Node) {
		n.Line -= first
		for _, c := range n.Content {
			move(c)
		}
	}
	move(item)
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: item.Line, Column: l.items.Column, Content: []*yaml.Node{item}}
	return &parsedText{t: newYAMLText(text), root: seq}
}

// spliceListOps applies ops, every one inside an item of a List, to each
// item's own lines. ok is false when the document or the ops are not of
// that shape (the caller splices the whole text instead); an error is
// one from splicing an item.
func spliceListOps(text []byte, ops []PatchOp) (out []byte, ok bool, err error) {
	return newSpliceRun().applyList(text, ops)
}

func (r *spliceRun) applyList(text []byte, ops []PatchOp) (out []byte, ok bool, err error) {
	if !bytes.Contains(text, []byte("items")) {
		return nil, false, nil
	}
	l, err := findListItems(text)
	if err != nil {
		return nil, false, nil
	}
	byItem, ok := itemOps(ops, len(l.items.Content))
	if !ok {
		return nil, false, nil
	}
	var b bytes.Buffer
	b.Grow(len(text) + len(text)/2)
	b.Write(text[:l.lineOffset(l.start[0])])
	for i := range l.items.Content {
		item := l.itemText(i)
		if ops := byItem[i]; len(ops) > 0 {
			if item, err = r.apply(item, l.itemTree(i, item), ops); err != nil {
				return nil, true, fmt.Errorf("items[%d]: %w", i, err)
			}
		}
		b.Write(item)
	}
	b.Write(text[l.lineOffset(l.start[len(l.start)-1]):])
	return b.Bytes(), true, nil
}
