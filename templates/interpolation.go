package templates

import (
	"fmt"
	"slices"
	"text/template/parse"
)

// lintInterpolation finds string and list parameters the fragment writes
// as is, unquoted, whose pattern admits YAML syntax. Render keeps any
// value from changing the document's structure (opaque.go), but a value
// written as is lands in whatever scalar surrounds it, where YAML's
// escapes and typing do not apply to it: the template should say what it
// means with quote or toJson. A parameter is written safely through quote
// or toJson as the last command of the pipeline that writes it, or when
// its pattern (each item's, for a list) excludes YAML syntax.
//
// It follows a value every way text/template lets it reach the output:
// into variables (declared or assigned, in any action, if, with or
// range), through with and range (as dot), into {{ template }} and
// {{ block }} calls (as the called template's dot and $), through
// functions and pipelines (a function's result holds its arguments'
// values, but len and the comparisons', which are not text), and
// through the data map itself ({{ . }}, {{ index . "p" }}). It assumes
// the worst where a template's text cannot tell: every branch is taken,
// a variable holds whatever was ever assigned to it.
func (t *Template) lintInterpolation() []string {
	if t.tmpl == nil || t.tmpl.Tree == nil {
		return nil
	}
	w := interpWalker{t: t, vars: map[string]taint{}, lines: map[string]int{}}
	// Variables take values from later actions too (an assignment in a
	// range body): walk until they hold no more.
	for range 16 {
		w.grew = false
		w.called = map[string]bool{}
		top := taint{root: true}
		w.walk(t.tmpl.Tree.Root, scope{tmpl: t.Name, dot: top, dollar: top})
		if !w.grew {
			break
		}
	}
	var out []string
	for _, name := range w.order {
		out = append(out, fmt.Sprintf("parameter %s is written as is (fragment line %d) and its pattern admits YAML syntax: "+
			"write it with quote or toJson, or give it a pattern that excludes newlines, quotes and YAML indicators",
			name, w.lines[name]))
	}
	return out
}

// yamlProbes each hold YAML syntax that changes a document's structure
// in some place a value may be written; a pattern that matches none of
// them excludes YAML syntax.
var yamlProbes = []string{
	"a\nb", "a\rb", "a: b", "a:", "a #b", `a"b`, "a'b", "{a", "a}", "[a", "a]", "a,b",
	"&a", "*a", "!a", "|a", ">a", "%a", "@a", "`a", "- a", "? a", "a\tb",
}

// admitsYAML reports whether p's values may hold YAML syntax.
func (p *Param) admitsYAML() bool {
	if p.Type != TypeString && p.Type != TypeList {
		return false
	}
	if p.re == nil {
		return true
	}
	return slices.ContainsFunc(yamlProbes, p.re.MatchString)
}

// taint is what a value holds of the parameters.
type taint struct {
	// raw are the parameters whose text it holds as is.
	raw []string
	// quoted are the parameters it holds as the whole of a quote or
	// toJson result, which a scalar may hold as is.
	quoted []string
	// root: it is the data map, which holds every parameter.
	root bool
}

// all is every parameter t holds, as text written into a larger one.
func (t taint) all(tmpl *Template) []string {
	if t.root {
		out := make([]string, len(tmpl.Params))
		for i := range tmpl.Params {
			out[i] = tmpl.Params[i].Name
		}
		return out
	}
	return union(t.raw, t.quoted)
}

func (t taint) merge(o taint) taint {
	return taint{raw: union(t.raw, o.raw), quoted: union(t.quoted, o.quoted), root: t.root || o.root}
}

func (t taint) covers(o taint) bool {
	return (t.root || !o.root) && subset(o.raw, t.raw) && subset(o.quoted, t.quoted)
}

func (t taint) String() string {
	return fmt.Sprintf("%v/%v/%t", t.raw, t.quoted, t.root)
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

// scope is where a node is walked: the template (the fragment or one it
// defines), what dot and $ hold.
type scope struct {
	tmpl        string
	dot, dollar taint
}

type interpWalker struct {
	t *Template
	// vars maps "<template> <variable>" to what the variable may hold.
	vars map[string]taint
	grew bool
	// called are the template calls walked in this pass, with what dot
	// held: a recursive template is walked once per dot.
	called map[string]bool
	order  []string
	lines  map[string]int
}

// walk visits n in scope s.
func (w *interpWalker) walk(n parse.Node, s scope) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			w.walk(c, s)
		}
	case *parse.ActionNode:
		v := w.pipe(n.Pipe, s)
		if len(n.Pipe.Decl) > 0 {
			return // {{ $v := ... }} and {{ $v = ... }} write nothing
		}
		w.print(v, n.Line)
	case *parse.IfNode:
		w.pipe(n.Pipe, s)
		w.walk(n.List, s)
		w.walk(n.ElseList, s)
	case *parse.WithNode:
		v := w.pipe(n.Pipe, s)
		w.walk(n.List, scope{s.tmpl, v, s.dollar})
		w.walk(n.ElseList, s)
	case *parse.RangeNode:
		// A parameter of the data map, or an item of a list parameter.
		item := taint{raw: w.value(n.Pipe, s).all(w.t)}
		if d := n.Pipe.Decl; len(d) > 0 {
			// {{ range $i, $v := ... }}: the last variable is the item;
			// the first of two is the index or key, the template's own.
			w.assign(s, d[len(d)-1], item)
		}
		w.walk(n.List, scope{s.tmpl, item, s.dollar})
		w.walk(n.ElseList, s)
	case *parse.TemplateNode:
		dot := w.pipe(n.Pipe, s)
		called := w.t.tmpl.Lookup(n.Name)
		key := n.Name + " " + dot.String()
		if called == nil || called.Tree == nil || w.called[key] {
			return
		}
		w.called[key] = true
		// A called template's $ is the dot it is handed.
		w.walk(called.Tree.Root, scope{n.Name, dot, dot})
	}
}

// print records the parameters v writes as is.
func (w *interpWalker) print(v taint, line int) {
	names := v.raw
	if v.root {
		names = v.all(w.t)
	}
	for _, name := range names {
		if p, ok := w.t.Param(name); ok && p.admitsYAML() {
			if _, seen := w.lines[name]; !seen {
				w.lines[name] = line
				w.order = append(w.order, name)
			}
		}
	}
}

// assign records that variable d may hold v.
func (w *interpWalker) assign(s scope, d *parse.VariableNode, v taint) {
	key := s.tmpl + " " + d.Ident[0]
	old := w.vars[key]
	if !old.covers(v) {
		w.vars[key] = old.merge(v)
		w.grew = true
	}
}

// variable is what a variable may hold.
func (w *interpWalker) variable(s scope, name string) taint {
	if name == "$" {
		return s.dollar
	}
	return w.vars[s.tmpl+" "+name]
}

// pipe is what a pipeline's value holds; its declared or assigned
// variables take it.
func (w *interpWalker) pipe(p *parse.PipeNode, s scope) taint {
	v := w.value(p, s)
	if p != nil {
		for _, d := range p.Decl {
			w.assign(s, d, v)
		}
	}
	return v
}

// value is what a pipeline's value holds.
func (w *interpWalker) value(p *parse.PipeNode, s scope) taint {
	if p == nil {
		return taint{}
	}
	var v taint
	for i, c := range p.Cmds {
		var prev *taint
		if i > 0 {
			prev = &v
		}
		v = w.command(c, prev, s)
	}
	return v
}

// nonText are functions whose result holds no parameter's text.
var nonText = []string{"len", "eq", "ne", "lt", "le", "gt", "ge", "not"}

// command is what a pipeline's command gives; prev is the previous
// command's value, its last argument.
func (w *interpWalker) command(c *parse.CommandNode, prev *taint, s scope) taint {
	if len(c.Args) == 0 {
		return taint{}
	}
	fn, isFunc := c.Args[0].(*parse.IdentifierNode)
	if !isFunc {
		// A value (.x, $v, (pipe), "lit"); a method's arguments are its
		// result's too.
		v := w.operand(c.Args[0], s)
		for _, a := range c.Args[1:] {
			v = taint{raw: union(v.all(w.t), w.operand(a, s).all(w.t))}
		}
		if prev != nil {
			v = taint{raw: union(v.all(w.t), prev.all(w.t))}
		}
		return v
	}
	var args []taint
	for _, a := range c.Args[1:] {
		args = append(args, w.operand(a, s))
	}
	if prev != nil {
		args = append(args, *prev)
	}
	var all []string
	for _, a := range args {
		all = union(all, a.all(w.t))
	}
	switch {
	case fn.Ident == "quote" || fn.Ident == "toJson":
		return taint{quoted: all}
	case slices.Contains(nonText, fn.Ident):
		return taint{}
	case fn.Ident == "index" && len(c.Args) == 3 && args[0].root:
		// index . "p" is parameter p.
		if key, ok := c.Args[2].(*parse.StringNode); ok {
			return w.field(args[0], []string{key.Text})
		}
	case fn.Ident == "and" || fn.Ident == "or":
		// One of its arguments, as it is.
		var v taint
		for _, a := range args {
			v = v.merge(a)
		}
		return v
	}
	// index, slice, print, printf, join, html, ...: the arguments' text.
	return taint{raw: all}
}

// operand is what an argument holds.
func (w *interpWalker) operand(n parse.Node, s scope) taint {
	switch n := n.(type) {
	case *parse.DotNode:
		return s.dot
	case *parse.FieldNode:
		return w.field(s.dot, n.Ident)
	case *parse.VariableNode:
		return w.field(w.variable(s, n.Ident[0]), n.Ident[1:])
	case *parse.ChainNode:
		return w.field(w.operand(n.Node, s), n.Field)
	case *parse.PipeNode:
		return w.pipe(n, s)
	}
	return taint{} // literals, nil, a function name alone
}

// field is what v.<path> holds: a parameter of the data map, or (of
// anything else) all that v holds.
func (w *interpWalker) field(v taint, path []string) taint {
	if len(path) == 0 {
		return v
	}
	if v.root {
		if _, ok := w.t.Param(path[0]); ok {
			return taint{raw: []string{path[0]}}
		}
		return taint{}
	}
	return taint{raw: v.all(w.t)}
}
