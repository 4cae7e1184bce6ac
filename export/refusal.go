package export

import (
	"fmt"
	"strings"
	"text/template/parse"
)

// Refusal is a template construct export cannot compile into a policy that
// injects exactly what the webhook injects. Line is the 1-based line of the
// template's fragment (0 when the problem is not at one place).
type Refusal struct {
	Template string
	File     string
	Line     int
	Reason   string
}

func (r *Refusal) Error() string {
	where := "template " + r.Template
	if r.File != "" {
		where += " (" + r.File + ")"
	}
	if r.Line > 0 {
		where += fmt.Sprintf(", fragment line %d", r.Line)
	}
	return where + ": " + r.Reason
}

// refusalAt builds a Refusal at byte offset pos of the fragment text.
func refusalAt(src *source, pos parse.Pos, format string, args ...any) *Refusal {
	line := 0
	if pos >= 0 && int(pos) <= len(src.text) {
		line = 1 + strings.Count(src.text[:pos], "\n")
	}
	return &Refusal{Template: src.name, File: src.file, Line: line, Reason: fmt.Sprintf(format, args...)}
}

// source is the template text refusals point into.
type source struct {
	name, file, text string
}
