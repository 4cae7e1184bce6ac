package export

import (
	"fmt"
	"text/template/parse"

	"github.com/graftdev/graft/templates"
)

// The symbolic evaluator runs a template's parse tree with parameter
// values it does not know: each is a hole in the output text. Parameters
// that steer control flow must be known, so a variant fixes them; a range
// over a list parameter is unrolled for a chosen number of items whose
// values are holes too. What it cannot follow faithfully it refuses.

// holeSrc is what a hole shows: a parameter's value, or one item of a list
// parameter.
type holeSrc struct {
	param *templates.Param
	// not: the negation of a bool parameter.
	not bool
	// item >= 0: item number item of the list parameter.
	item int
}

// part is a piece of rendered text: a literal, a hole, or a range marker.
type part struct {
	lit  string
	hole *holePart
	// mark is a range marker, rendered as is (see rangeMark).
	mark string
	// opens: this literal starts the output of that escaping.
	opens *escApp
}

type holePart struct {
	src holeSrc
	// escs are the escapings applied to the hole, innermost first.
	escs []*escApp
	pos  parse.Pos
}

// escApp is one application of an escaping function (quote, toJson,
// printf %q) to text holding holes.
type escApp struct {
	kind escKind
	pos  parse.Pos
}

type escKind uint8

const (
	escGoQuote escKind = iota // strconv.Quote
	escJSON                   // encoding/json of a string
)

func (k escKind) String() string {
	if k == escJSON {
		return "toJson"
	}
	return "quote"
}

// Values the evaluator handles besides Go's concrete ones (string, int64,
// int, bool, []string, nil).
type (
	paramVal struct {
		p   *templates.Param
		not bool
	}
	itemVal struct {
		p *templates.Param
		i int
	}
	textVal struct{ parts []part }
	rootVal struct{}
)

// shape says how to unroll ranges over list parameters.
type shape struct {
	items map[string]int
	// marks brackets each unrolled range with markers, to find it again.
	marks bool
}

// needConcrete asks for a variant that fixes param.
type needConcrete struct{ param *templates.Param }

func (n *needConcrete) Error() string { return "parameter " + n.param.Name + " must be fixed" }

type variable struct {
	name string
	val  any
}

type evaluator struct {
	src    *source
	tmpl   *templates.Template
	fixed  map[string]any
	shape  shape
	ranges []*templates.Param // range id -> list parameter
	out    []part
	vars   []variable
	depth  int // symbolic ranges being unrolled
}

func (ev *evaluator) walk(n parse.Node, dot any) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := ev.walk(c, dot); err != nil {
				return err
			}
		}
		return nil
	case *parse.TextNode:
		ev.out = append(ev.out, part{lit: string(n.Text)})
		return nil
	case *parse.CommentNode:
		return nil
	case *parse.ActionNode:
		v, err := ev.pipe(n.Pipe, dot)
		if err != nil {
			return err
		}
		if len(n.Pipe.Decl) > 0 {
			return nil // a declaration prints nothing
		}
		parts, err := ev.textOf(v, n.Position())
		if err != nil {
			return err
		}
		ev.out = append(ev.out, parts...)
		return nil
	case *parse.IfNode:
		return ev.branch(&n.BranchNode, dot, false)
	case *parse.WithNode:
		return ev.branch(&n.BranchNode, dot, true)
	case *parse.RangeNode:
		return ev.rangeNode(n, dot)
	case *parse.BreakNode, *parse.ContinueNode:
		return refusalAt(ev.src, n.Position(), "break and continue are not supported")
	case *parse.TemplateNode:
		return refusalAt(ev.src, n.Position(), "{{ template }} is not supported")
	}
	return refusalAt(ev.src, n.Position(), "unsupported template construct %s", n)
}

func (ev *evaluator) branch(b *parse.BranchNode, dot any, with bool) error {
	mark := len(ev.vars)
	defer func() { ev.vars = ev.vars[:mark] }()
	v, err := ev.pipe(b.Pipe, dot)
	if err != nil {
		return err
	}
	truth, err := ev.truth(v, b.Position())
	if err != nil {
		return err
	}
	if truth {
		if with {
			dot = v
		}
		return ev.walk(b.List, dot)
	}
	return ev.walk(b.ElseList, dot)
}

func (ev *evaluator) rangeNode(n *parse.RangeNode, dot any) error {
	mark := len(ev.vars)
	defer func() { ev.vars = ev.vars[:mark] }()
	// The declared variables belong to the loop, not the pipeline.
	decl := n.Pipe.Decl
	pipe := *n.Pipe
	pipe.Decl = nil
	v, err := ev.pipe(&pipe, dot)
	if err != nil {
		return err
	}
	var elems []any
	switch v := v.(type) {
	case paramVal:
		if v.p.Type != templates.TypeList {
			return refusalAt(ev.src, n.Position(), "range over parameter %s of type %s", v.p.Name, v.p.Type)
		}
		return ev.rangeSymbolic(n, v.p, decl)
	case int64:
		for i := range v {
			elems = append(elems, int(i))
		}
	case int:
		for i := range v {
			elems = append(elems, i)
		}
	case []string:
		for _, s := range v {
			elems = append(elems, s)
		}
	case nil:
	default:
		return refusalAt(ev.src, n.Position(), "range over %s is not supported", describe(v))
	}
	if len(elems) == 0 {
		return ev.walk(n.ElseList, dot)
	}
	for i, e := range elems {
		index := any(i)
		if _, isInt := v.(int64); isInt {
			index = e // ranging over an int yields the int itself
		}
		if err := ev.iteration(n, decl, index, e); err != nil {
			return err
		}
	}
	return nil
}

func (ev *evaluator) iteration(n *parse.RangeNode, decl []*parse.VariableNode, index, elem any) error {
	mark := len(ev.vars)
	defer func() { ev.vars = ev.vars[:mark] }()
	switch len(decl) {
	case 1:
		ev.vars = append(ev.vars, variable{decl[0].Ident[0], elem})
	case 2:
		ev.vars = append(ev.vars, variable{decl[0].Ident[0], index}, variable{decl[1].Ident[0], elem})
	}
	return ev.walk(n.List, elem)
}

// rangeSymbolic unrolls a range over list parameter p for the shape's
// number of items, each a hole.
func (ev *evaluator) rangeSymbolic(n *parse.RangeNode, p *templates.Param, decl []*parse.VariableNode) error {
	if n.ElseList != nil {
		return refusalAt(ev.src, n.Position(), "{{ else }} of a range over list parameter %s is not supported", p.Name)
	}
	if ev.depth > 0 {
		return refusalAt(ev.src, n.Position(), "nested ranges over list parameters are not supported")
	}
	ev.depth++
	defer func() { ev.depth-- }()
	id := len(ev.ranges)
	ev.ranges = append(ev.ranges, p)
	count := ev.shape.items[p.Name]
	if ev.shape.marks {
		ev.out = append(ev.out, part{mark: rangeMark('B', id)})
	}
	for i := range count {
		if i == 1 && ev.shape.marks {
			ev.out = append(ev.out, part{mark: rangeMark('M', id)})
		}
		if err := ev.iteration(n, decl, i, itemVal{p, i}); err != nil {
			return err
		}
	}
	if ev.shape.marks {
		ev.out = append(ev.out, part{mark: rangeMark('E', id)})
	}
	return nil
}

func (ev *evaluator) pipe(p *parse.PipeNode, dot any) (any, error) {
	if p == nil {
		return nil, nil
	}
	var v any
	for i, c := range p.Cmds {
		var final any
		hasFinal := i > 0
		if hasFinal {
			final = v
		}
		var err error
		v, err = ev.command(c, dot, final, hasFinal)
		if err != nil {
			return nil, err
		}
	}
	for _, d := range p.Decl {
		name := d.Ident[0]
		if p.IsAssign {
			if !ev.assign(name, v) {
				return nil, refusalAt(ev.src, d.Position(), "assignment to undeclared variable %s", name)
			}
			continue
		}
		ev.vars = append(ev.vars, variable{name, v})
	}
	return v, nil
}

func (ev *evaluator) assign(name string, v any) bool {
	for i := len(ev.vars) - 1; i >= 0; i-- {
		if ev.vars[i].name == name {
			ev.vars[i].val = v
			return true
		}
	}
	return false
}

func (ev *evaluator) command(c *parse.CommandNode, dot, final any, hasFinal bool) (any, error) {
	first := c.Args[0]
	if id, ok := first.(*parse.IdentifierNode); ok {
		var args []any
		for _, a := range c.Args[1:] {
			v, err := ev.arg(a, dot)
			if err != nil {
				return nil, err
			}
			args = append(args, v)
		}
		if hasFinal {
			args = append(args, final)
		}
		return ev.call(id.Ident, args, c.Position())
	}
	if len(c.Args) > 1 || hasFinal {
		return nil, refusalAt(ev.src, c.Position(), "arguments to a non-function %s", first)
	}
	return ev.arg(first, dot)
}

func (ev *evaluator) arg(n parse.Node, dot any) (any, error) {
	switch n := n.(type) {
	case *parse.DotNode:
		return dot, nil
	case *parse.NilNode:
		return nil, nil
	case *parse.BoolNode:
		return n.True, nil
	case *parse.StringNode:
		return n.Text, nil
	case *parse.NumberNode:
		if n.IsInt {
			return n.Int64, nil
		}
		return nil, refusalAt(ev.src, n.Position(), "non-integer number %s", n.Text)
	case *parse.FieldNode:
		return ev.field(dot, n.Ident, n.Position())
	case *parse.VariableNode:
		v, ok := ev.lookup(n.Ident[0])
		if !ok {
			return nil, refusalAt(ev.src, n.Position(), "undefined variable %s", n.Ident[0])
		}
		return ev.field(v, n.Ident[1:], n.Position())
	case *parse.PipeNode:
		mark := len(ev.vars)
		defer func() { ev.vars = ev.vars[:mark] }()
		return ev.pipe(n, dot)
	case *parse.ChainNode:
		return nil, refusalAt(ev.src, n.Position(), "field chains are not supported")
	case *parse.IdentifierNode:
		return ev.call(n.Ident, nil, n.Position())
	}
	return nil, refusalAt(ev.src, n.Position(), "unsupported argument %s", n)
}

func (ev *evaluator) lookup(name string) (any, bool) {
	if name == "$" {
		return rootVal{}, true
	}
	for i := len(ev.vars) - 1; i >= 0; i-- {
		if ev.vars[i].name == name {
			return ev.vars[i].val, true
		}
	}
	return nil, false
}

// field resolves .a.b on v. Only the root has fields: the parameters.
func (ev *evaluator) field(v any, idents []string, pos parse.Pos) (any, error) {
	if len(idents) == 0 {
		return v, nil
	}
	if _, ok := v.(rootVal); !ok || len(idents) > 1 {
		return nil, refusalAt(ev.src, pos, "field .%s of %s is not supported", idents[len(idents)-1], describe(v))
	}
	p, ok := ev.tmpl.Param(idents[0])
	if !ok {
		return nil, refusalAt(ev.src, pos, "no parameter %s", idents[0])
	}
	if fv, ok := ev.fixed[p.Name]; ok {
		return fv, nil
	}
	return paramVal{p: p}, nil
}

// truth is text/template's truthiness; a parameter's must be known.
func (ev *evaluator) truth(v any, pos parse.Pos) (bool, error) {
	switch v := v.(type) {
	case paramVal:
		return false, ev.needFixed(v.p, pos, "a condition")
	case itemVal, textVal:
		return false, refusalAt(ev.src, pos, "a condition on %s, whose value only the Pod knows", describe(v))
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		return v != "", nil
	case int64:
		return v != 0, nil
	case int:
		return v != 0, nil
	case []string:
		return len(v) > 0, nil
	case rootVal:
		return true, nil
	}
	return false, refusalAt(ev.src, pos, "a condition on %s", describe(v))
}

// needFixed asks for a variant fixing p when p has a small finite domain
// (enum, bool); other parameters cannot steer the fragment.
func (ev *evaluator) needFixed(p *templates.Param, pos parse.Pos, what string) error {
	switch p.Type {
	case templates.TypeEnum, templates.TypeBool:
		return &needConcrete{param: p}
	}
	return refusalAt(ev.src, pos, "%s on parameter %s of type %s: only enum and bool parameters may steer the fragment",
		what, p.Name, p.Type)
}

// textOf turns a value into output text, as text/template prints it.
func (ev *evaluator) textOf(v any, pos parse.Pos) ([]part, error) {
	switch v := v.(type) {
	case textVal:
		return v.parts, nil
	case paramVal:
		if v.p.Type == templates.TypeList {
			return nil, refusalAt(ev.src, pos, "list parameter %s printed as a whole: use join or range", v.p.Name)
		}
		return []part{{hole: &holePart{src: holeSrc{param: v.p, not: v.not, item: -1}, pos: pos}}}, nil
	case itemVal:
		return []part{{hole: &holePart{src: holeSrc{param: v.p, item: v.i}, pos: pos}}}, nil
	case nil:
		return []part{{lit: "<no value>"}}, nil
	case string, int64, int, bool:
		return []part{{lit: fmt.Sprint(v)}}, nil
	case []string:
		return []part{{lit: fmt.Sprint(v)}}, nil
	}
	return nil, refusalAt(ev.src, pos, "cannot print %s", describe(v))
}

func describe(v any) string {
	switch v := v.(type) {
	case paramVal:
		return "parameter " + v.p.Name
	case itemVal:
		return "an item of parameter " + v.p.Name
	case textVal:
		return "text built from parameters"
	case rootVal:
		return "the parameters"
	case nil:
		return "nil"
	}
	return fmt.Sprintf("a %T", v)
}

// rangeMark is the marker bracketing (B), splitting (M, between the first
// and second item) and closing (E) unrolled range id.
func rangeMark(kind byte, id int) string {
	return fmt.Sprintf("%s%c%dQ", markerPrefix, kind, id)
}

// markerPrefix starts every marker; letters and digits only, so YAML reads
// a marker the same way in every context.
const markerPrefix = "GRAFTX"
