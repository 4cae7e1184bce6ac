package refdocs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The docs quote messages graft writes: warnings kubectl shows, deny
// messages, log lines, CLI output. TestDocsQuoteMessagesGraftWrites holds
// every such quote to the code: it must be an instance of a message the
// code can produce. A reworded message leaves its old quote failing here.
//
// Messages are read from the code as templates: the arguments of every
// call (string literals as text, anything else as a value; printf verbs
// as values; `dst = append(dst, ...)` chains joined), and the guarantee
// policy's CEL messageExpression. A value is one word (a name, a number,
// a quoted token); a value with spaces in it must itself be an instance
// of a template, so a quote cannot pass on the strength of a generic
// "graft: %v".
//
// Which code spans of the docs are message quotes:
//   - those starting with "graft: " or "graft audit: " (graft's prefixes);
//   - the part after "denied the request: " or "denied request: " (the API
//     server's wrapping of a webhook's or a policy's message);
//   - those right after "log line", and those joined to a quote by "(or ".
//
// In a quote, "<word>" stands for a value, and "..." ends what is checked
// (the quote is then a prefix of a message).

// docsWithQuotes are the documents checked.
var docsWithQuotes = []string{"README.md", "docs", "deploy/helm/graft/README.md"}

type tmplPart struct {
	lit  string // literal text, whitespace collapsed; "" for a value
	wild bool
}

type msgTemplate struct {
	parts []tmplPart
	where string
}

var spaceRE = regexp.MustCompile(`\s+`)

func collapse(s string) string { return spaceRE.ReplaceAllString(s, " ") }

// printfVerb matches a fmt verb with flags, width and precision.
var printfVerb = regexp.MustCompile(`%[-+# 0]*[0-9]*(\.[0-9]+)?[a-zA-Z%]`)

// addText appends literal text, or values for the verbs of a format.
func addText(parts []tmplPart, s string, format bool) []tmplPart {
	if !format {
		return append(parts, tmplPart{lit: s})
	}
	last := 0
	for _, m := range printfVerb.FindAllStringIndex(s, -1) {
		parts = append(parts, tmplPart{lit: s[last:m[0]]})
		if s[m[0]:m[1]] == "%%" {
			parts = append(parts, tmplPart{lit: "%"})
		} else {
			parts = append(parts, tmplPart{wild: true})
		}
		last = m[1]
	}
	return append(parts, tmplPart{lit: s[last:]})
}

// exprParts flattens an argument: string literals and + concatenations
// into text, anything else into a value.
func exprParts(parts []tmplPart, e ast.Expr, format bool) []tmplPart {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			if s, err := strconv.Unquote(e.Value); err == nil {
				return addText(parts, s, format)
			}
		}
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			return exprParts(exprParts(parts, e.X, format), e.Y, format)
		}
	case *ast.ParenExpr:
		return exprParts(parts, e.X, format)
	}
	return append(parts, tmplPart{wild: true})
}

// normalise merges adjacent literals and values, collapses whitespace and
// trims trailing newlines; it reports whether the template has enough
// literal text to stand for a message (six characters but spaces).
func normalise(parts []tmplPart) ([]tmplPart, bool) {
	var out []tmplPart
	text := 0
	for _, p := range parts {
		if !p.wild {
			p.lit = collapse(p.lit)
			if p.lit == "" {
				continue
			}
			text += len(strings.ReplaceAll(p.lit, " ", ""))
		}
		if n := len(out); n > 0 && out[n-1].wild == p.wild {
			if !p.wild {
				out[n-1].lit += p.lit
			}
			continue
		}
		out = append(out, p)
	}
	if n := len(out); n > 0 && !out[n-1].wild {
		if out[n-1].lit = strings.TrimRight(out[n-1].lit, " "); out[n-1].lit == "" {
			out = out[:n-1]
		}
	}
	return out, text >= 6
}

// codeTemplates reads the message templates of every Go file of the main
// module but tests.
func codeTemplates(t *testing.T, root string) []msgTemplate {
	t.Helper()
	var out []msgTemplate
	add := func(parts []tmplPart, where string) {
		if p, ok := normalise(parts); ok {
			out = append(out, msgTemplate{parts: p, where: where})
		}
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "e2e") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				name := ""
				switch fn := n.Fun.(type) {
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				case *ast.Ident:
					name = fn.Name
				}
				format := strings.HasSuffix(name, "f")
				where := fset.Position(n.Pos()).String()
				var parts []tmplPart
				for i, a := range n.Args {
					if i > 0 && strings.HasSuffix(name, "ln") {
						parts = append(parts, tmplPart{lit: " "})
					}
					parts = exprParts(parts, a, format)
					// Each argument holding text is a message too: a
					// log call's message, a deny's status message, a
					// Fprintf's format after its writer.
					add(exprParts(nil, a, format), where)
				}
				add(parts, where)
				// The arguments from the first that holds text, as one
				// message: a deny's status code and reason come before
				// its message's parts.
				for i, a := range n.Args {
					if lit := exprParts(nil, a, format); len(lit) > 0 && !lit[0].wild {
						if i > 0 {
							var rest []tmplPart
							for _, b := range n.Args[i:] {
								rest = exprParts(rest, b, format)
							}
							add(rest, where)
						}
						break
					}
				}
			case *ast.BlockStmt:
				// dst = append(dst, "..."...) chains, as one message.
				var parts []tmplPart
				flush := func() {
					if parts != nil {
						add(parts, fset.Position(n.Pos()).String())
						parts = nil
					}
				}
				for _, st := range n.List {
					as, ok := st.(*ast.AssignStmt)
					if !ok || len(as.Rhs) != 1 {
						flush()
						continue
					}
					call, ok := as.Rhs[0].(*ast.CallExpr)
					if id, isIdent := callName(call); !ok || !isIdent || id != "append" || len(call.Args) != 2 || !call.Ellipsis.IsValid() {
						flush()
						continue
					}
					parts = exprParts(parts, call.Args[1], false)
				}
				flush()
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func callName(c *ast.CallExpr) (string, bool) {
	if c == nil {
		return "", false
	}
	id, ok := c.Fun.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}

// celLiteral matches a CEL string literal in single or double quotes.
var celLiteral = regexp.MustCompile(`'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"`)

// policyTemplates reads the guarantee policies' messages. They are
// built by CEL concatenations of literals and values spread over the
// policies' variables (per container, per field), so every chain of
// string literals joined by + (with at most one value between two
// literals, a value at either end) is a message template: a quote must
// be an instance of one, as of the code's.
func policyTemplates(t *testing.T, root string) []msgTemplate {
	t.Helper()
	const file = "deploy/base/validatingadmissionpolicy.yaml"
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	var out []msgTemplate
	for _, line := range strings.Split(string(data), "\n") {
		for _, parts := range literalChains(line) {
			if p, ok := normalise(parts); ok {
				out = append(out, msgTemplate{parts: p, where: file})
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the policy's messages have no text")
	}
	return out
}

// valueTerm is one CEL term between two + of a message: an identifier,
// field or call, no literal nor operator but +.
var valueTerm = regexp.MustCompile(`^\s*\+\s*(?:[\w.]+(?:\([^"?:]*\))?\s*\+\s*)?$`)

// literalChains finds the chains of CEL string literals joined by + in
// line, a value between two literals, or before the first or after the
// last joined by +, as a wildcard part.
func literalChains(line string) [][]tmplPart {
	locs := celLiteral.FindAllStringSubmatchIndex(line, -1)
	var out [][]tmplPart
	var cur []tmplPart
	joined := func(gap string, atEnd bool) bool {
		gap = strings.TrimSpace(gap)
		if atEnd {
			return strings.HasPrefix(gap, "+")
		}
		return strings.HasSuffix(gap, "+")
	}
	prevEnd := 0
	for i, m := range locs {
		gap := line[prevEnd:m[0]]
		switch {
		case i > 0 && valueTerm.MatchString(gap):
			if strings.Count(gap, "+") == 2 {
				cur = append(cur, tmplPart{wild: true})
			}
		default:
			if cur != nil {
				if joined(gap, true) {
					cur = append(cur, tmplPart{wild: true})
				}
				out = append(out, cur)
			}
			cur = []tmplPart{}
			if joined(gap, false) {
				cur = append(cur, tmplPart{wild: true})
			}
		}
		if m[2] >= 0 {
			cur = append(cur, tmplPart{lit: line[m[2]:m[3]]})
		} else {
			cur = append(cur, tmplPart{lit: line[m[4]:m[5]]})
		}
		prevEnd = m[1]
	}
	if cur != nil {
		if joined(line[prevEnd:], true) {
			cur = append(cur, tmplPart{wild: true})
		}
		out = append(out, cur)
	}
	return out
}

// matcher decides whether a text is an instance of a template.
type matcher struct {
	templates []msgTemplate
	values    map[valueKey]bool // value's answers, memoised
}

type valueKey struct {
	v     string
	depth int
}

// instance reports whether s is an instance of some template; partial: a
// prefix of one.
func (m *matcher) instance(s string, partial bool, depth int) (string, bool) {
	for _, tm := range m.templates {
		if possible(tm.parts, s, partial) && m.match(tm.parts, s, partial, depth) {
			return tm.where, true
		}
	}
	return "", false
}

// possible is a cheap necessary condition for match: the template's
// leading literal starts s, and its literals occur in s in order (up to
// s's end, for a prefix).
func possible(parts []tmplPart, s string, partial bool) bool {
	if !parts[0].wild && !strings.HasPrefix(s, parts[0].lit) && !(partial && strings.HasPrefix(parts[0].lit, s)) {
		return false
	}
	rest := s
	for _, p := range parts {
		if p.wild {
			continue
		}
		i := strings.Index(rest, p.lit)
		if i < 0 {
			return partial
		}
		rest = rest[i+len(p.lit):]
	}
	return true
}

func (m *matcher) match(parts []tmplPart, s string, partial bool, depth int) bool {
	if len(parts) == 0 {
		return s == ""
	}
	if s == "" {
		return partial || (len(parts) == 1 && parts[0].wild)
	}
	p := parts[0]
	if !p.wild {
		if strings.HasPrefix(s, p.lit) {
			return m.match(parts[1:], s[len(p.lit):], partial, depth)
		}
		return partial && strings.HasPrefix(p.lit, s)
	}
	// A value, shortest first; a trailing one may be empty (log fields).
	lo := 1
	if len(parts) == 1 {
		lo = 0
	}
	for n := lo; n <= len(s); n++ {
		if m.value(s[:n], depth) && m.match(parts[1:], s[n:], partial, depth) {
			return true
		}
	}
	return false
}

// value: one word, or with spaces an instance of a template itself.
func (m *matcher) value(v string, depth int) bool {
	if !strings.Contains(v, " ") {
		return true
	}
	if depth >= 2 {
		return false
	}
	k := valueKey{v, depth}
	if ok, seen := m.values[k]; seen {
		return ok
	}
	_, ok := m.instance(v, false, depth+1)
	if m.values == nil {
		m.values = map[valueKey]bool{}
	}
	m.values[k] = ok
	return ok
}

// quote is one message quote of the docs.
type quote struct {
	doc, text string
	line      int
}

var (
	codeSpan    = regexp.MustCompile("`([^`]+)`")
	placeholder = regexp.MustCompile(`<[a-z][a-z-]*>`)
)

// docQuotes finds the message quotes of a markdown file (see the rules
// above), fenced code blocks left out.
func docQuotes(path string, data []byte) []quote {
	var prose strings.Builder
	fenced := false
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			prose.WriteString("\n")
			continue
		}
		if fenced {
			prose.WriteString("\n")
			continue
		}
		prose.WriteString(line)
	}
	text := prose.String()
	var out []quote
	prevEnd, prevMsg := -1, false
	for _, loc := range codeSpan.FindAllStringSubmatchIndex(text, -1) {
		span := collapse(text[loc[2]:loc[3]])
		before := collapse(text[max(0, loc[0]-12):loc[0]])
		msg := ""
		switch {
		case strings.HasPrefix(span, "graft: ") || strings.HasPrefix(span, "graft audit: "):
			msg = span
		case strings.Contains(span, "denied the request: "):
			_, msg, _ = strings.Cut(span, "denied the request: ")
		case strings.Contains(span, "denied request: "):
			_, msg, _ = strings.Cut(span, "denied request: ")
		case strings.HasSuffix(before, "log line "),
			prevMsg && collapse(text[prevEnd:loc[0]]) == " (or ":
			msg = span
		}
		prevEnd, prevMsg = loc[1], msg != ""
		if msg != "" {
			out = append(out, quote{doc: path, text: msg, line: strings.Count(text[:loc[0]], "\n") + 1})
		}
	}
	return out
}

func TestDocsQuoteMessagesGraftWrites(t *testing.T) {
	m := &matcher{templates: append(codeTemplates(t, repoRoot), policyTemplates(t, repoRoot)...)}
	if len(m.templates) < 100 {
		t.Fatalf("read only %d message templates from the code", len(m.templates))
	}
	var files []string
	for _, d := range docsWithQuotes {
		err := filepath.WalkDir(filepath.Join(repoRoot, d), func(path string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && strings.HasSuffix(path, ".md") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range docQuotes(f, data) {
			checked++
			text := placeholder.ReplaceAllString(q.text, "VALUE")
			partial := false
			if before, _, ok := strings.Cut(text, "..."); ok {
				text, partial = strings.TrimRight(before, " "), true
			}
			if _, ok := m.instance(text, partial, 0); !ok {
				rel, _ := filepath.Rel(repoRoot, q.doc)
				t.Errorf("%s:%d quotes a message graft does not write: %q", rel, q.line, q.text)
			}
		}
	}
	if checked < 8 {
		t.Fatalf("found only %d message quotes in the docs", checked)
	}
	t.Logf("%d message quotes checked against %d templates", checked, len(m.templates))
}

// TestQuoteMatcher: the matcher takes instances and prefixes of the
// templates it is given and nothing else; a generic "graft: %v" does not
// vouch for a sentence.
func TestQuoteMatcher(t *testing.T) {
	tmpl := func(format string) msgTemplate {
		p, _ := normalise(addText(nil, format, true))
		return msgTemplate{parts: p, where: format}
	}
	m := &matcher{templates: []msgTemplate{
		tmpl("graft: %v"),
		tmpl("graft: template %s not injected: the Pod already has %s %q, which graft did not inject"),
		tmpl("annotation %s=%q: %s"),
		tmpl("must be at most %s"),
		tmpl("certificate reload failed; keeping the current one"),
	}}
	for _, c := range []struct {
		text    string
		partial bool
		want    bool
	}{
		{`graft: template mesh-proxy not injected: the Pod already has container "graft-proxy", which graft did not inject`, false, true},
		{`graft: container "graft-proxy" already exists in the Pod; kept as is, not injected`, false, false},
		{`graft: oops`, false, true},
		{`annotation graft.dev/mesh-proxy.concurrency="200": must be at most 16`, false, true},
		{`annotation graft.dev/mesh-proxy.concurrency="200": must not be odd`, false, false},
		{`certificate reload failed; keeping the current one`, false, true},
		{`certificate reload failed; keeping`, true, true},
		{`certificate reload failed; keeping`, false, false},
		{`certificate reload failed, keeping`, true, false},
	} {
		if _, got := m.instance(c.text, c.partial, 0); got != c.want {
			t.Errorf("%q (partial %v): %v, want %v", c.text, c.partial, got, c.want)
		}
	}
}

// TestDocQuotes: the rules pick the quotes they say they pick.
func TestDocQuotes(t *testing.T) {
	md := "A warning `graft: sidecars not injected (x)` and a command `graft certs`.\n" +
		"The log line `config reload rejected; the previous\n  configuration keeps serving` (or `client CA reload failed; ...`).\n" +
		"- `admission webhook \"a.inject.graft.dev\" denied the request: annotation x=\"1\": bad`\n" +
		"```sh\ngraft: not a quote in a fence\n```\n" +
		"Just `a span` here, (or `another`).\n"
	var got []string
	for _, q := range docQuotes("x.md", []byte(md)) {
		got = append(got, q.text)
	}
	want := []string{
		"graft: sidecars not injected (x)",
		"config reload rejected; the previous configuration keeps serving",
		"client CA reload failed; ...",
		`annotation x="1": bad`,
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("quotes %q, want %q", got, want)
	}
}
