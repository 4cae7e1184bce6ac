package export

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/graftdev/graft/templates"
)

// celNames tells the CEL writer how to read parameters.
type celNames interface {
	// text is a CEL string: the parameter's text (see paramText).
	text(src holeSrc) string
	// list is a CEL list of strings: a list parameter's items.
	list(p *templates.Param) string
}

// celString writes s as a CEL string literal. Go's quoting uses only
// escapes CEL reads the same way.
func celString(s string) string { return strconv.Quote(s) }

// celNode writes n as a CEL value: maps and lists of plain values, never
// typed Object initializers (see the package documentation).
func celNode(n node, names celNames) string {
	var b strings.Builder
	writeNode(&b, n, names)
	return b.String()
}

func writeNode(b *strings.Builder, n node, names celNames) {
	switch n := n.(type) {
	case nil:
		b.WriteString("null")
	case string:
		b.WriteString(celString(n))
	case bool:
		b.WriteString(strconv.FormatBool(n))
	case json.Number:
		b.WriteString(n.String())
	case object:
		b.WriteString("{")
		for i, k := range n.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			// dyn: a CEL map literal's values must otherwise share one type.
			b.WriteString(celString(k) + ": dyn(")
			writeNode(b, n.vals[k], names)
			b.WriteString(")")
		}
		b.WriteString("}")
	case array:
		mixed := len(slices.CompactFunc(slices.Clone([]node(n)), func(a, b node) bool { return kindOf(a) == kindOf(b) })) > 1
		b.WriteString("[")
		for i, e := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			if mixed {
				b.WriteString("dyn(")
			}
			writeNode(b, e, names)
			if mixed {
				b.WriteString(")")
			}
		}
		b.WriteString("]")
	case str:
		b.WriteString(n.cel(names, ""))
	case typed:
		if n.src.param.Type == templates.TypeBool {
			b.WriteString("(" + names.text(n.src) + " == 'true')")
		} else {
			b.WriteString("int(" + names.text(n.src) + ")")
		}
	}
}

// kindOf is a node's CEL type, for list literals, which must be
// homogeneous.
func kindOf(n node) string {
	switch n := n.(type) {
	case string, str:
		return "string"
	case bool:
		return "bool"
	case json.Number:
		if strings.ContainsAny(n.String(), ".eE") {
			return "double"
		}
		return "int"
	case object:
		return "map"
	case array:
		return "list"
	case typed:
		if n.src.param.Type == templates.TypeBool {
			return "bool"
		}
		return "int"
	}
	return "null"
}

// cel writes s as a CEL string expression; item is the CEL expression of
// the current range item.
func (s str) cel(names celNames, item string) string {
	var terms []string
	for _, p := range s {
		switch {
		case p.param:
			terms = append(terms, names.text(p.src))
		case p.item:
			terms = append(terms, item)
		case p.rng != nil:
			terms = append(terms, p.rng.cel(names))
		case p.lit != "":
			terms = append(terms, celString(p.lit))
		}
	}
	if len(terms) == 0 {
		return `""`
	}
	return strings.Join(terms, " + ")
}

func (r *rangePiece) cel(names celNames) string {
	l := names.list(r.list)
	if r.rest == nil || slices.Equal(r.rest, r.first) {
		if len(r.first) == 1 && r.first[0].item {
			return l + `.join("")`
		}
		return l + ".map(it, " + r.first.cel(names, "it") + `).join("")`
	}
	// The usual separator: every later item is the first one after sep.
	if sep, ok := separator(r.first, r.rest); ok {
		if len(r.first) == 1 && r.first[0].item {
			return l + ".join(" + celString(sep) + ")"
		}
		return l + ".map(it, " + r.first.cel(names, "it") + ").join(" + celString(sep) + ")"
	}
	at := l + "[ix]"
	return "lists.range(size(" + l + ")).map(ix, ix == 0 ? " + r.first.cel(names, at) + " : " +
		r.rest.cel(names, at) + `).join("")`
}

// separator reports whether rest is sep followed by first.
func separator(first, rest str) (string, bool) {
	if len(rest) == 0 || rest[0].lit == "" || rest[0].param || rest[0].item || rest[0].rng != nil {
		return "", false
	}
	head := rest[0].lit
	if len(first) > 0 && first[0].lit != "" && !first[0].param && !first[0].item && first[0].rng == nil {
		// Adjacent literals merged: rest starts with sep + first's literal.
		if !strings.HasSuffix(head, first[0].lit) || len(head) == len(first[0].lit) {
			return "", false
		}
		return head[:len(head)-len(first[0].lit)], slices.Equal(rest[1:], first[1:])
	}
	return head, slices.Equal(rest[1:], first)
}
