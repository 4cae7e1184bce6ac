package templates

import (
	"fmt"
	"slices"
	"text/template/parse"
)

// lintInterpolation finds string and list parameters the fragment writes
// as is, unquoted, whose pattern admits YAML syntax: a value such as
// "evil:1\n  command: [sh]" would then add to the document (Render also
// refuses any value that changes the document's structure: structure.go).
// A parameter is written safely through quote or toJson as the last
// command of the action that writes it, or when its pattern (each item's,
// for a list) excludes YAML syntax. It follows the values into variables
// and into range and with, as far as a template's text shows them.
func (t *Template) lintInterpolation() []string {
	if t.tmpl == nil || t.tmpl.Tree == nil {
		return nil
	}
	w := interpWalker{t: t, vars: map[string][]string{}}
	w.walk(t.tmpl.Tree.Root, nil)
	var out []string
	for _, name := range w.order {
		p, _ := t.Param(name)
		out = append(out, fmt.Sprintf("parameter %s is written as is (fragment line %d) and its pattern admits YAML syntax: "+
			"write it with quote or toJson, or give it a pattern that excludes newlines, quotes and YAML indicators",
			p.Name, w.lines[name]))
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

type interpWalker struct {
	t *Template
	// vars maps a variable to the parameters its value came from.
	vars  map[string][]string
	order []string
	lines map[string]int
}

// walk visits n; dot is the parameters . holds (inside range or with).
func (w *interpWalker) walk(n parse.Node, dot []string) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			w.walk(c, dot)
		}
	case *parse.ActionNode:
		params := w.params(n.Pipe, dot)
		if len(n.Pipe.Decl) > 0 {
			for _, d := range n.Pipe.Decl {
				w.vars[d.Ident[0]] = params
			}
			return
		}
		if quoted(n.Pipe) {
			return
		}
		for _, name := range params {
			if p, ok := w.t.Param(name); ok && p.admitsYAML() {
				w.flag(name, n.Line)
			}
		}
	case *parse.IfNode:
		w.walk(n.List, dot)
		w.walk(n.ElseList, dot)
	case *parse.RangeNode:
		items := w.params(n.Pipe, dot)
		if len(n.Pipe.Decl) > 0 {
			// {{ range $i, $v := .list }}: the last variable is the item.
			w.vars[n.Pipe.Decl[len(n.Pipe.Decl)-1].Ident[0]] = items
		}
		w.walk(n.List, items)
		w.walk(n.ElseList, dot)
	case *parse.WithNode:
		w.walk(n.List, w.params(n.Pipe, dot))
		w.walk(n.ElseList, dot)
	}
}

func (w *interpWalker) flag(name string, line int) {
	if w.lines == nil {
		w.lines = map[string]int{}
	}
	if _, seen := w.lines[name]; !seen {
		w.lines[name] = line
		w.order = append(w.order, name)
	}
}

// quoted reports whether a pipeline's last command is quote or toJson.
func quoted(p *parse.PipeNode) bool {
	if p == nil || len(p.Cmds) == 0 {
		return false
	}
	last := p.Cmds[len(p.Cmds)-1]
	if len(last.Args) == 0 {
		return false
	}
	id, ok := last.Args[0].(*parse.IdentifierNode)
	return ok && (id.Ident == "quote" || id.Ident == "toJson")
}

// params lists the parameters a pipeline reads: .x, $.x, a variable that
// holds one, and . where it holds one.
func (w *interpWalker) params(p *parse.PipeNode, dot []string) []string {
	if p == nil {
		return nil
	}
	var out []string
	var visit func(n parse.Node)
	visit = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.FieldNode:
			out = append(out, n.Ident[0])
		case *parse.VariableNode:
			if n.Ident[0] == "$" && len(n.Ident) > 1 {
				out = append(out, n.Ident[1])
			} else {
				out = append(out, w.vars[n.Ident[0]]...)
			}
		case *parse.DotNode:
			out = append(out, dot...)
		case *parse.ChainNode:
			visit(n.Node)
		case *parse.PipeNode:
			for _, c := range n.Cmds {
				visit(c)
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				visit(a)
			}
		}
	}
	visit(p)
	return out
}
