package refdocs

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// title is how a struct's section is headed: root names the top level.
func (n *node) title(root string) string {
	if n.path == "" {
		return root
	}
	return "`" + n.path + "`"
}

// Anchor is the fragment GitHub gives a Markdown heading.
func Anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// writeSections writes a section per struct of n, n first: its keys as a
// table, then the values of its enumerations.
func writeSections(b *bytes.Buffer, n *node, level, root string) {
	for _, s := range n.structs() {
		fmt.Fprintf(b, "\n%s %s\n\n", level, s.title(root))
		b.WriteString("| key | type | default | description |\n|---|---|---|---|\n")
		for _, f := range s.fields {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", f.name, typeWords(f.node, root), defaultWords(f), cell(f.doc))
		}
		for _, f := range s.fields {
			if f.node.enum == nil {
				continue
			}
			fmt.Fprintf(b, "\n`%s` is one of:\n\n", f.name)
			for _, c := range f.node.enum {
				fmt.Fprintf(b, "- `%s`: %s\n", c.Value, constDoc(c))
			}
		}
	}
}

// typeWords says in words what a value is.
func typeWords(n *node, root string) string {
	switch n.kind {
	case kindString:
		if len(n.enum) > 0 {
			vals := make([]string, len(n.enum))
			for i, c := range n.enum {
				vals[i] = "`" + c.Value + "`"
			}
			if len(vals) == 2 {
				return vals[0] + " or " + vals[1]
			}
			return "one of " + strings.Join(vals, ", ")
		}
		return "string"
	case kindBool:
		return "boolean"
	case kindInt:
		return "integer"
	case kindNumber:
		return "number"
	case kindDuration:
		return "duration (`300ms`, `1m30s`)"
	case kindObject:
		return "object"
	case kindList:
		return "list of " + plural(n.elem, root)
	case kindMap:
		return "map of " + plural(n.elem, root) + " by name"
	case kindStruct:
		return fmt.Sprintf("[%s](#%s)", n.name, Anchor(n.title(root)))
	}
	return "?"
}

func plural(n *node, root string) string {
	switch n.kind {
	case kindStruct:
		return fmt.Sprintf("[%ss](#%s)", n.name, Anchor(n.title(root)))
	case kindList:
		return "lists of " + plural(n.elem, root)
	case kindMap:
		return "maps of " + plural(n.elem, root)
	case kindString:
		if len(n.enum) > 0 {
			return typeWords(n, root) + " values"
		}
	case kindDuration:
		return "durations"
	}
	return typeWords(n, root) + "s"
}

// defaultWords renders a key's default.
func defaultWords(f *field) string {
	switch v := f.def.(type) {
	case nil:
		if f.node.kind == kindBool {
			return "`false`"
		}
	case string:
		if v != "" {
			return "`" + v + "`"
		}
	case bool:
		return fmt.Sprintf("`%v`", v)
	case float64:
		return "`" + strconv.FormatFloat(v, 'f', -1, 64) + "`"
	case []any:
		if len(v) > 0 {
			items := make([]string, len(v))
			for i, e := range v {
				items[i] = fmt.Sprint(e)
			}
			return "`[" + strings.Join(items, ", ") + "]`"
		}
	case map[string]any:
		// A struct's keys have defaults of their own; a map's are listed.
		if len(v) > 0 && f.node.kind == kindMap {
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return codeList(keys)
		}
	}
	return "—"
}

// cell is s made safe for a Markdown table cell.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// fence writes data as a fenced code block.
func fence(b *bytes.Buffer, lang string, data []byte) {
	fmt.Fprintf(b, "```%s\n%s", lang, data)
	if !bytes.HasSuffix(data, []byte("\n")) {
		b.WriteByte('\n')
	}
	b.WriteString("```\n")
}
