package export

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/graftdev/graft/templates"
)

// The compiled form of a rendered fragment: JSON whose strings may be
// built from parameter values. It prints as CEL and evaluates in Go, the
// latter to check it against renderings.

var markerRE = regexp.MustCompile(markerPrefix + `[PNIBME][0-9]+(_[0-9]+)?Q`)

// node is a JSON value: string, json.Number, bool or nil (literals),
// object, array, str (a string with holes) or typed (a whole YAML scalar
// that is one int or bool parameter).
type node any

type object struct {
	keys []string
	vals map[string]node
}

type array []node

type str []piece

// piece of a str: a literal, a parameter's text, the current range item,
// or a range over a list parameter.
type piece struct {
	lit   string
	param bool // src is the parameter shown
	src   holeSrc
	item  bool
	rng   *rangePiece
}

// rangePiece renders first for the first item and rest for each later one.
type rangePiece struct {
	list        *templates.Param
	first, rest str
}

type typed struct{ src holeSrc }

// buildNode turns a decoded rendering with markers into a node.
func (t *compiler) buildNode(v any, typedMarkers map[string]bool, ranges []*templates.Param) (node, error) {
	switch v := v.(type) {
	case map[string]any:
		o := object{keys: slices.Sorted(maps.Keys(v)), vals: map[string]node{}}
		for _, k := range o.keys {
			if strings.Contains(k, markerPrefix) {
				return nil, t.refuse("a parameter lands in the key %q; keys must be fixed", k)
			}
			n, err := t.buildNode(v[k], typedMarkers, ranges)
			if err != nil {
				return nil, err
			}
			o.vals[k] = n
		}
		return o, nil
	case []any:
		a := make(array, 0, len(v))
		for _, e := range v {
			n, err := t.buildNode(e, typedMarkers, ranges)
			if err != nil {
				return nil, err
			}
			a = append(a, n)
		}
		return a, nil
	case string:
		if !strings.Contains(v, markerPrefix) {
			return v, nil
		}
		if typedMarkers[v] {
			src, err := t.markerSrc(v)
			if err != nil {
				return nil, err
			}
			return typed{src}, nil
		}
		return t.buildStr(v, ranges)
	}
	return v, nil
}

// buildStr splits a string at its markers.
func (t *compiler) buildStr(s string, ranges []*templates.Param) (str, error) {
	var out str
	var cur *rangePiece
	var body *str // where pieces go: out, or the open range's first or rest
	body = &out
	item := -1 // item number the open range's current body shows
	last := 0
	for _, loc := range markerRE.FindAllStringIndex(s, -1) {
		if loc[0] > last {
			*body = append(*body, piece{lit: s[last:loc[0]]})
		}
		last = loc[1]
		m := s[loc[0]:loc[1]]
		kind := m[len(markerPrefix)]
		switch kind {
		case 'B', 'M', 'E':
			id, _ := strconv.Atoi(m[len(markerPrefix)+1 : len(m)-1])
			if id >= len(ranges) {
				return nil, t.refuse("internal: unknown range marker %s", m)
			}
			switch {
			case kind == 'B' && cur == nil:
				cur = &rangePiece{list: ranges[id]}
				body, item = &cur.first, 0
			case kind == 'M' && cur != nil && cur.list == ranges[id]:
				body, item = &cur.rest, 1
			case kind == 'E' && cur != nil && cur.list == ranges[id]:
				if item == 0 {
					cur.rest = nil // at most one item: rest is never used
				}
				out = append(out, piece{rng: cur})
				cur, body, item = nil, &out, -1
			default:
				return nil, t.refuse("a range over parameter %s produces YAML structure (several values or list items), not text within one value", ranges[id].Name)
			}
		default:
			src, err := t.markerSrc(m)
			if err != nil {
				return nil, err
			}
			if src.item >= 0 {
				if cur == nil || src.param != cur.list || src.item != item {
					return nil, t.refuse("an item of parameter %s is used outside its range", src.param.Name)
				}
				*body = append(*body, piece{item: true})
				continue
			}
			*body = append(*body, piece{param: true, src: src})
		}
	}
	if cur != nil {
		return nil, t.refuse("a range over parameter %s produces YAML structure (several values or list items), not text within one value", cur.list.Name)
	}
	if last < len(s) {
		out = append(out, piece{lit: s[last:]})
	}
	return out, nil
}

// markerSrc reads a hole marker back.
func (t *compiler) markerSrc(m string) (holeSrc, error) {
	body := m[len(markerPrefix)+1 : len(m)-1]
	idx, rest, _ := strings.Cut(body, "_")
	i, err := strconv.Atoi(idx)
	if err != nil || i >= len(t.tmpl.Params) {
		return holeSrc{}, t.refuse("internal: bad marker %s", m)
	}
	src := holeSrc{param: &t.tmpl.Params[i], item: -1}
	switch m[len(markerPrefix)] {
	case 'N':
		src.not = true
	case 'I':
		if src.item, err = strconv.Atoi(rest); err != nil {
			return holeSrc{}, t.refuse("internal: bad marker %s", m)
		}
	}
	return src, nil
}

// values gives parameter texts and list items to evaluate a node with.
type values interface {
	text(src holeSrc) string
	items(p *templates.Param) []string
}

// eval computes the JSON value n stands for.
func eval(n node, vals values) any {
	switch n := n.(type) {
	case object:
		m := make(map[string]any, len(n.keys))
		for _, k := range n.keys {
			m[k] = eval(n.vals[k], vals)
		}
		return m
	case array:
		out := make([]any, len(n))
		for i, e := range n {
			out[i] = eval(e, vals)
		}
		return out
	case str:
		return n.eval(vals, "")
	case typed:
		txt := vals.text(n.src)
		if m, isMarker := vals.(markerValues); isMarker && m.markersOnly {
			return txt // renderings with markers hold the marker text
		}
		if n.src.param.Type == templates.TypeBool {
			return txt == "true"
		}
		return json.Number(txt)
	}
	return n
}

func (s str) eval(vals values, item string) string {
	var b strings.Builder
	for _, p := range s {
		switch {
		case p.param:
			b.WriteString(vals.text(p.src))
		case p.item:
			b.WriteString(item)
		case p.rng != nil:
			for i, it := range vals.items(p.rng.list) {
				body := p.rng.first
				if i > 0 && p.rng.rest != nil {
					body = p.rng.rest
				}
				b.WriteString(body.eval(vals, it))
			}
		default:
			b.WriteString(p.lit)
		}
	}
	return b.String()
}

// markerValues evaluates nodes as a rendering with markers reads.
type markerValues struct {
	t           *compiler
	counts      map[string]int
	markersOnly bool
}

func (m markerValues) text(src holeSrc) string { return m.t.holeMarker(src) }

func (m markerValues) items(p *templates.Param) []string {
	out := make([]string, m.counts[p.Name])
	for i := range out {
		out[i] = m.t.holeMarker(holeSrc{param: p, item: i})
	}
	return out
}

// rawValues evaluates nodes with real parameter values.
type rawValues map[string]string

func (r rawValues) text(src holeSrc) string { return paramText(src.param, r[src.param.Name], src.not) }

func (r rawValues) items(p *templates.Param) []string { return listItems(r[p.Name]) }

// describeDiff shows two JSON values that should be equal, for messages.
func describeDiff(got, want any) string {
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	return fmt.Sprintf("compiled %s, rendered %s", truncate(string(g), 200), truncate(string(w), 200))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
