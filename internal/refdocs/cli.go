package refdocs

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/internal/names"
)

// cliIntro is the hand-written part of docs/reference/cli.md: what holds
// for every command that the commands' own help does not say.
const cliIntro = `# graft command line

<!-- Generated from the commands' help by ` + "`go test ./cmd/graft -run TestCLIReference -update-docs`" + ` (or ` + "`make docs`" + `); edit the commands, not this file. -->

Every command below is one binary, ` + "`graft`" + `. ` + "`graft --" + names.FlagVersion + "`" + ` and ` + "`graft version`" + `
print the version a release build stamped, else what the Go toolchain
recorded (a ` + "`go install`" + ` of a tag prints the tag), the commit, its time and the Go
version.

**Inputs** (` + "`inject`" + `, ` + "`explain`" + `, ` + "`uninject`" + `): files, directories (` + "`-" + names.FlagRecursiveShort + "`" + ` for their
subdirectories), ` + "`-`" + ` for stdin, or ` + "`http://`" + ` and ` + "`https://`" + ` URLs, fetched with a
30 s timeout and refused past 32 MiB, like a file; a URL cannot be
rewritten ` + "`--" + names.FlagInPlace + "`" + `.

**YAML 1.1.** kubectl reads manifests as YAML 1.1, where an unquoted ` + "`y`" + `,
` + "`yes`" + `, ` + "`on`" + `, ` + "`n`" + `, ` + "`no`" + ` or ` + "`off`" + ` (in any of their three cases) is a boolean,
and turns every mapping key into a string (` + "`on`" + ` becomes ` + "`\"true\"`" + `, ` + "`010`" + `
becomes ` + "`\"8\"`" + `). graft reads values as kubectl sends them (` + "`runAsNonRoot: yes`" + `
is true), but refuses, naming the document, the path and the value, such
a boolean where Kubernetes takes a string (` + "`apiVersion`" + `, ` + "`kind`" + `, an object's
name, namespace, labels and annotations, graft's parameters, the names of
containers, volumes, env vars, mounts and ports), and any key kubectl
would send as another string: quote it.

**Namespaces** of the live commands (` + "`audit`" + `, ` + "`explain KIND/NAME`" + `), as
kubectl chooses them: ` + "`-n`" + `, else the kubeconfig context's namespace (in a
cluster, the Pod's own), else ` + "`default`" + `; ` + "`audit -A`" + ` reads every namespace.
`

// CLIReference is docs/reference/cli.md for the command tree under root:
// the introduction above, then per command its synopsis, description,
// examples and flags, as its help gives them.
func CLIReference(root *cobra.Command) []byte {
	var b bytes.Buffer
	b.WriteString(cliIntro)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		c.InitDefaultHelpFlag()
		if !c.HasParent() {
			c.InitDefaultVersionFlag()
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s.\n\n", c.CommandPath(), strings.TrimSuffix(c.Short, "."))
		if c.Runnable() {
			fmt.Fprintf(&b, "```\n%s\n```\n\n", c.UseLine())
		}
		if c.Long != "" {
			b.WriteString(strings.TrimSpace(c.Long) + "\n\n")
		}
		if c.Example != "" {
			fmt.Fprintf(&b, "Examples:\n\n```sh\n%s\n```\n\n", strings.TrimRight(c.Example, "\n"))
		}
		if subs := visible(c.Commands()); len(subs) > 0 {
			b.WriteString("Commands: ")
			for i, s := range subs {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "`%s`", s.CommandPath())
			}
			b.WriteString(".\n\n")
		}
		if fl := c.NonInheritedFlags(); fl.HasAvailableFlags() {
			fmt.Fprintf(&b, "Flags:\n\n```\n%s```\n", fl.FlagUsagesWrapped(0))
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return b.Bytes()
}

func visible(cmds []*cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range cmds {
		if !c.Hidden && c.Name() != "help" && c.Name() != "completion" {
			out = append(out, c)
		}
	}
	return out
}
