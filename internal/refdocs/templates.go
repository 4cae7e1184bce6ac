package refdocs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// exampleParams are the parameters every function example renders with.
const exampleParams = `  - {name: image, type: string, default: "ghcr.io/graftdev/agent:1.0.0"}
  - {name: hosts, type: list, default: "api.example.com,db.example.com"}
  - {name: port, type: int, default: "9901"}
  - {name: logLevel, type: enum, values: [debug, info], default: info}
  - {name: cpu, type: quantity, default: 50m}
  - {name: debug, type: bool, default: "false"}
  - {name: interval, type: duration, default: 10s}
`

// builtinFuncs are text/template's own functions, which fragments may use
// too: what each does, and an example rendered with exampleParams.
var builtinFuncs = []struct{ name, doc, example string }{
	{"and", "Its first empty argument, or its last.", `{{ and .debug "on" }}`},
	{"or", "Its first non-empty argument, or its last.", `{{ or .debug "off" }}`},
	{"not", "The boolean negation of its argument.", `{{ not .debug }}`},
	{"len", "The length of a list or string.", `{{ len .hosts }}`},
	{"index", "An item of a list.", `{{ index .hosts 0 }}`},
	{"slice", "Part of a string or list.", `{{ slice .image 0 4 }}`},
	{"print", "Its arguments, as fmt.Sprint writes them.", `{{ print .cpu "/" .debug }}`},
	{"println", "Its arguments, as fmt.Sprintln writes them (a newline at the end).", `{{ println .port }}`},
	{"printf", "Its arguments formatted by its first, as fmt.Sprintf does.", `{{ printf "%s:%d" "127.0.0.1" .port }}`},
	{"eq", "Whether its first argument equals any of the others.", `{{ eq .logLevel "debug" "info" }}`},
	{"ne", "Whether its arguments differ.", `{{ ne .port 80 }}`},
	{"lt", "Whether the first is less than the second.", `{{ lt .port 1024 }}`},
	{"le", "Whether the first is at most the second.", `{{ le .port 9901 }}`},
	{"gt", "Whether the first is greater than the second.", `{{ gt .port 1024 }}`},
	{"ge", "Whether the first is at least the second.", `{{ ge .port 65536 }}`},
	{"html", "Its argument escaped for HTML.", `{{ html "<b>" }}`},
	{"js", "Its argument escaped for JavaScript.", `{{ js "it's" }}`},
	{"urlquery", "Its argument escaped for a URL query.", `{{ urlquery "a b&c" }}`},
}

// templatesReference is docs/reference/templates.md.
func templatesReference(root string) ([]byte, error) {
	src, err := readSource(root, "templates")
	if err != nil {
		return nil, err
	}
	// The defaults of a template that sets only what it must.
	probe, err := templates.Parse("probe.yaml", []byte("name: probe\ndescription: d\nfragment: \"\"\n"))
	if err != nil {
		return nil, fmt.Errorf("refdocs: %w", err)
	}
	defs, err := toJSONMap(probe)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"name", "description", "fragment"} {
		delete(defs, k)
	}
	b := &builder{src: src, defaults: map[string]map[string]any{"": defs}}
	tmpl, err := b.build("templates.Template", "template", "")
	if err != nil {
		return nil, err
	}
	frag, err := b.build("templates.fragmentDoc", "fragment", "fragment")
	if err != nil {
		return nil, err
	}
	// The engine's fixture template: a parameter of every type, in a small
	// fragment.
	example, err := os.ReadFile(filepath.Join(root, "inject", "testdata", "templates", "agent.yaml"))
	if err != nil {
		return nil, fmt.Errorf("refdocs: %w", err)
	}

	var out bytes.Buffer
	out.WriteString("# Template format reference\n\n")
	out.WriteString(generatedBy("the types of templates/ and their doc comments"))
	out.WriteString("A template is one YAML file, `<name>.yaml`, that says what graft adds to a Pod.\n" +
		"graft embeds its built-in templates ([templates/README.md](../../templates/README.md)\n" +
		"describes each); `graft serve --" + names.FlagTemplatesDir + " DIR` (or `server.templatesDir`)\n" +
		"loads every `*.yaml` file of `DIR` over them, a file of a built-in template's name\n" +
		"replacing it, and reloads them when they change. A template is checked when it\n" +
		"is loaded: its keys strictly, its parameters' declarations, and its fragment\n" +
		"rendered with the defaults. `graft templates lint DIR` also renders every\n" +
		"parameter at its bounds and checks the result against the rules the API server\n" +
		"applies to a Pod; `graft render NAME` shows what a template renders.\n\n" +
		"An example, the template the engine's tests use (a parameter of every type):\n\n")
	fence(&out, "yaml", example)
	writeSections(&out, tmpl, "##", "Template keys")
	out.WriteString("\nA Pod sets parameter `P` of template `T` with the annotation `graft.dev/T.P`; a\n" +
		"profile sets it under `params` (see the [configuration reference](configuration.md)).\n" +
		"An annotation wins over the profile, the profile over the default. A value that\n" +
		"breaks the parameter's rules is refused with a message naming the annotation, the\n" +
		"value and the rule (or, with the profile's `onInvalidParams: default`, replaced\n" +
		"by the default with a warning).\n")

	out.WriteString("\n## The fragment\n\n" +
		"`fragment` is a [Go text/template](https://pkg.go.dev/text/template) that renders\n" +
		"YAML with these keys, all optional. The parameters are its data (`.port`), typed\n" +
		"as their types say; naming one the template does not declare is an error.\n" +
		"graft adds only what the Pod lacks, matching by name, and records what it added\n" +
		"in the Pod's `graft.dev/status` annotation.\n")
	writeSections(&out, frag, "###", "fragment")

	if err := writeFunctions(&out, src); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// writeFunctions documents graft's template functions (from their doc
// comments, each with its Example line) and text/template's, every example
// rendered by the real template engine.
func writeFunctions(out *bytes.Buffer, src *source) error {
	out.WriteString("\n## Functions\n\n" +
		"Besides text/template's actions (`if`, `range`, `with`, ...), a fragment may call\n" +
		"these functions. Each example renders with these parameters:\n\n")
	fence(out, "yaml", []byte("parameters:\n"+exampleParams))
	if len(src.funcs) == 0 {
		return fmt.Errorf("refdocs: no template functions found in templates' funcs")
	}
	out.WriteString("\n### graft's functions\n\n| function | what it does | example | renders |\n|---|---|---|---|\n")
	for _, f := range src.funcs {
		doc, ex, ok := strings.Cut(f.Doc, "Example:")
		ex = strings.TrimSpace(ex)
		if !ok || ex == "" {
			return fmt.Errorf("refdocs: template function %s: its doc comment has no \"Example:\" line", f.Name)
		}
		got, err := renderExample(ex)
		if err != nil {
			return fmt.Errorf("refdocs: template function %s: %w", f.Name, err)
		}
		fmt.Fprintf(out, "| `%s` | %s | %s | %s |\n", f.Name, cell(constDoc(constant{Name: f.Name, Doc: doc})), code(ex), code(got))
	}
	out.WriteString("\n### text/template's functions\n\n| function | what it does | example | renders |\n|---|---|---|---|\n")
	for _, f := range builtinFuncs {
		got, err := renderExample(f.example)
		if err != nil {
			return fmt.Errorf("refdocs: template function %s: %w", f.name, err)
		}
		fmt.Fprintf(out, "| `%s` | %s | %s | %s |\n", f.name, f.doc, code(f.example), code(got))
	}
	out.WriteString("\n`call` is text/template's too, but no parameter holds a function to call.\n")
	return nil
}

// renderExample renders one line of a fragment with exampleParams, through
// templates.Parse and Render as graft itself does, and returns the line.
func renderExample(line string) (string, error) {
	src := "name: example\ndescription: One example.\nparameters:\n" + exampleParams +
		"fragment: |\n  annotations:\n    example.graft.dev/out: |-\n      " + line + "\n"
	t, err := templates.Parse("example.yaml", []byte(src))
	if err != nil {
		return "", err
	}
	f, err := t.Render(nil)
	if err != nil {
		return "", err
	}
	if len(f.Annotations) != 1 {
		return "", fmt.Errorf("example %q rendered %d annotations", line, len(f.Annotations))
	}
	return f.Annotations[0].Value, nil
}

// code is s as inline code in a table cell; a trailing newline is shown.
func code(s string) string {
	nl := strings.HasSuffix(s, "\n")
	s = strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "|", `\|`)
	if strings.Contains(s, "`") {
		s = "`` " + s + " ``"
	} else {
		s = "`" + s + "`"
	}
	if nl {
		s += " and a newline"
	}
	return s
}
