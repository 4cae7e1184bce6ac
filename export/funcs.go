package export

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/template/parse"

	"github.com/graftdev/graft/templates"
)

// parseFuncs names every function a fragment may call, for the parser: the
// three graft adds and text/template's own. The parser only checks names.
func parseFuncs() map[string]any {
	m := map[string]any{}
	for _, name := range []string{"quote", "toJson", "join", "and", "or", "not", "eq", "ne", "lt", "le", "gt", "ge",
		"len", "index", "slice", "print", "printf", "println", "html", "js", "urlquery", "call"} {
		m[name] = fmt.Sprint
	}
	return m
}

// call applies function name to args, with symbolic arguments where the
// function has an exact equivalent on holes.
func (ev *evaluator) call(name string, args []any, pos parse.Pos) (any, error) {
	switch name {
	case "quote":
		if err := ev.arity(name, args, 1, pos); err != nil {
			return nil, err
		}
		return ev.escape(escGoQuote, args[0], pos)
	case "toJson":
		if err := ev.arity(name, args, 1, pos); err != nil {
			return nil, err
		}
		return ev.toJSON(args[0], pos)
	case "join":
		if err := ev.arity(name, args, 2, pos); err != nil {
			return nil, err
		}
		return ev.join(args[0], args[1], pos)
	case "printf":
		return ev.printf(args, pos)
	case "not":
		if err := ev.arity(name, args, 1, pos); err != nil {
			return nil, err
		}
		if p, ok := args[0].(paramVal); ok && p.p.Type == templates.TypeBool {
			return paramVal{p: p.p, not: !p.not}, nil
		}
		t, err := ev.truth(args[0], pos)
		return !t, err
	case "and", "or":
		if len(args) == 0 {
			return nil, refusalAt(ev.src, pos, "%s needs arguments", name)
		}
		for i, a := range args {
			t, err := ev.truth(a, pos)
			if err != nil {
				return nil, err
			}
			if t == (name == "or") || i == len(args)-1 {
				return a, nil
			}
		}
	case "eq", "ne":
		if len(args) < 2 {
			return nil, refusalAt(ev.src, pos, "%s needs two arguments", name)
		}
		eq := false
		for _, b := range args[1:] {
			same, err := ev.equal(args[0], b, pos)
			if err != nil {
				return nil, err
			}
			eq = eq || same
		}
		if name == "ne" {
			if len(args) != 2 {
				return nil, refusalAt(ev.src, pos, "ne takes two arguments")
			}
			return !eq, nil
		}
		return eq, nil
	case "print":
		for _, a := range args {
			if !isConcrete(a) {
				return nil, refusalAt(ev.src, pos, "print of %s: use printf", describe(a))
			}
		}
		return fmt.Sprint(args...), nil
	}
	return nil, refusalAt(ev.src, pos, "function %s has no CEL equivalent in export", name)
}

func (ev *evaluator) arity(name string, args []any, n int, pos parse.Pos) error {
	if len(args) != n {
		return refusalAt(ev.src, pos, "%s takes %d argument(s), got %d", name, n, len(args))
	}
	return nil
}

func isConcrete(v any) bool {
	switch v.(type) {
	case paramVal, itemVal, textVal, rootVal:
		return false
	}
	return true
}

// equal compares two values as eq does; a parameter compared must be fixed.
func (ev *evaluator) equal(a, b any, pos parse.Pos) (bool, error) {
	for _, v := range []any{a, b} {
		switch v := v.(type) {
		case paramVal:
			return false, ev.needFixed(v.p, pos, "a comparison")
		case itemVal, textVal, rootVal:
			return false, refusalAt(ev.src, pos, "a comparison of %s, whose value only the Pod knows", describe(v))
		}
	}
	switch a := a.(type) {
	case int:
		return int64(a) == toInt64(b), nil
	case int64:
		return a == toInt64(b), nil
	case []string:
		return false, refusalAt(ev.src, pos, "eq on a list")
	}
	return a == b, nil
}

func toInt64(v any) int64 {
	switch v := v.(type) {
	case int:
		return int64(v)
	case int64:
		return v
	}
	return -1 << 63
}

// escape applies an escaping function. On known text it is the function
// itself; on holes it escapes the literals around them and records the
// escaping on each hole, whose own text must come through unchanged.
func (ev *evaluator) escape(kind escKind, v any, pos parse.Pos) (any, error) {
	if isConcrete(v) {
		s := fmt.Sprint(v)
		if kind == escJSON {
			b, err := json.Marshal(s)
			return string(b), err
		}
		return strconv.Quote(s), nil
	}
	parts, err := ev.textOf(v, pos)
	if err != nil {
		return nil, err
	}
	app := &escApp{kind: kind, pos: pos}
	out := []part{{lit: `"`, opens: app}}
	for _, p := range parts {
		switch {
		case p.hole != nil:
			h := *p.hole
			h.escs = append(append([]*escApp(nil), h.escs...), app)
			out = append(out, part{hole: &h})
		case p.mark != "":
			out = append(out, p)
		default:
			out = append(out, part{lit: escapeInner(kind, p.lit)})
		}
	}
	return textVal{append(out, part{lit: `"`})}, nil
}

// escapeInner escapes s as it appears inside the function's quotes. Both
// functions escape rune by rune, so escaping pieces one at a time gives
// the same text as escaping the whole.
func escapeInner(kind escKind, s string) string {
	if kind == escJSON {
		b, _ := json.Marshal(s) // a string always marshals
		return string(b[1 : len(b)-1])
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// toJSON is toJson: a JSON string for strings, digits for an int, true
// or false for a bool.
func (ev *evaluator) toJSON(v any, pos parse.Pos) (any, error) {
	if isConcrete(v) {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, refusalAt(ev.src, pos, "toJson: %s", err)
		}
		return string(b), nil
	}
	if p, ok := v.(paramVal); ok {
		switch p.p.Type {
		case templates.TypeInt, templates.TypeBool:
			return textVal{[]part{{hole: &holePart{src: holeSrc{param: p.p, not: p.not, item: -1}, pos: pos}}}}, nil
		case templates.TypeList:
			return nil, refusalAt(ev.src, pos, "toJson of list parameter %s", p.p.Name)
		}
	}
	return ev.escape(escJSON, v, pos)
}

// join is join on a list parameter: unrolled like a range whose items
// after the first start with sep.
func (ev *evaluator) join(sepV, list any, pos parse.Pos) (any, error) {
	sep, ok := sepV.(string)
	if !ok {
		return nil, refusalAt(ev.src, pos, "join: the separator must be a constant string")
	}
	switch l := list.(type) {
	case []string:
		return strings.Join(l, sep), nil
	case paramVal:
		if l.p.Type != templates.TypeList {
			return nil, refusalAt(ev.src, pos, "join of parameter %s of type %s", l.p.Name, l.p.Type)
		}
		if ev.depth > 0 {
			return nil, refusalAt(ev.src, pos, "join inside a range over a list parameter is not supported")
		}
		id := len(ev.ranges)
		ev.ranges = append(ev.ranges, l.p)
		var out []part
		if ev.shape.marks {
			out = append(out, part{mark: rangeMark('B', id)})
		}
		for i := range ev.shape.items[l.p.Name] {
			if i > 0 {
				if i == 1 && ev.shape.marks {
					out = append(out, part{mark: rangeMark('M', id)})
				}
				out = append(out, part{lit: sep})
			}
			out = append(out, part{hole: &holePart{src: holeSrc{param: l.p, item: i}, pos: pos}})
		}
		if ev.shape.marks {
			out = append(out, part{mark: rangeMark('E', id)})
		}
		return textVal{out}, nil
	}
	return nil, refusalAt(ev.src, pos, "join of %s", describe(list))
}

// printf supports the verbs %s, %v, %d and %q, without flags.
func (ev *evaluator) printf(args []any, pos parse.Pos) (any, error) {
	if len(args) == 0 {
		return nil, refusalAt(ev.src, pos, "printf needs a format")
	}
	format, ok := args[0].(string)
	if !ok {
		return nil, refusalAt(ev.src, pos, "printf: the format must be a constant string")
	}
	args = args[1:]
	allKnown := true
	for _, a := range args {
		allKnown = allKnown && isConcrete(a)
	}
	if allKnown {
		return fmt.Sprintf(format, args...), nil
	}
	var out []part
	lit := strings.Builder{}
	next := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			lit.WriteByte(c)
			continue
		}
		if i+1 >= len(format) {
			return nil, refusalAt(ev.src, pos, "printf: format ends with %%")
		}
		i++
		verb := format[i]
		if verb == '%' {
			lit.WriteByte('%')
			continue
		}
		if !strings.ContainsRune("svdq", rune(verb)) {
			return nil, refusalAt(ev.src, pos, "printf verb %%%c is not supported on parameters (use %%s, %%v, %%d or %%q)", verb)
		}
		if next >= len(args) {
			return nil, refusalAt(ev.src, pos, "printf: missing argument for %%%c", verb)
		}
		a := args[next]
		next++
		var piece any = a
		if verb == 'q' {
			if isConcrete(a) {
				if _, isStr := a.(string); !isStr {
					return nil, refusalAt(ev.src, pos, "printf %%q of a non-string")
				}
			}
			var err error
			if piece, err = ev.escape(escGoQuote, a, pos); err != nil {
				return nil, err
			}
		} else if isConcrete(a) {
			piece = fmt.Sprintf("%"+string(verb), a)
		}
		parts, err := ev.textOf(piece, pos)
		if err != nil {
			return nil, err
		}
		out = append(out, part{lit: lit.String()})
		lit.Reset()
		out = append(out, parts...)
	}
	if next != len(args) {
		return nil, refusalAt(ev.src, pos, "printf: %d argument(s) left over", len(args)-next)
	}
	out = append(out, part{lit: lit.String()})
	return textVal{out}, nil
}
