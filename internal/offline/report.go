package offline

import (
	"fmt"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/internal/manifest"
	"github.com/graftdev/graft/internal/names"
)

// Report is what inject, explain and uninject say on stderr: warnings
// always; one line per object and notes about assumptions unless quiet.
// It holds its lines until Flush, which knows whether the run succeeded:
// a line saying an object was injected is a lie when nothing is written.
type Report struct {
	w     io.Writer
	quiet bool
	// files: the input has several files, so lines name theirs.
	files bool
	noted map[string]bool
	lines []reportLine
}

type reportLine struct {
	text   string
	object bool // the line about an object: only said if the run succeeds
}

// NewReport is the report of a run over docs, to w.
func NewReport(w io.Writer, quiet bool, docs []*manifest.Document) *Report {
	r := &Report{w: w, quiet: quiet, noted: map[string]bool{}}
	for _, d := range docs {
		r.files = r.files || d.Source() != docs[0].Source()
	}
	return r
}

// Flush writes what the run had to say: everything if err is nil, else
// the warnings and notes but not what happened to each object, since
// nothing was written.
func (r *Report) Flush(err error) {
	for _, l := range r.lines {
		if !l.object || err == nil {
			fmt.Fprintln(r.w, l.text)
		}
	}
	r.lines = nil
}

func (r *Report) warn(d *manifest.Document, what, msg string) {
	r.lines = append(r.lines, reportLine{text: fmt.Sprintf("warning: %s: document %d (%s): %s", d.Source(), d.Index(), what, msg)})
}

// note says something once.
func (r *Report) note(msg string) {
	if r.quiet || r.noted[msg] {
		return
	}
	r.noted[msg] = true
	r.lines = append(r.lines, reportLine{text: "note: " + msg})
}

// object is the one line about an object: kind/name: what happened.
func (r *Report) object(d *manifest.Document, ref, what string) {
	if r.quiet {
		return
	}
	text := ref + ": " + what
	if r.files {
		text = d.Source() + ": " + text
	}
	r.lines = append(r.lines, reportLine{text: text, object: true})
}

// podWarnings are what graft inject notices and the webhook cannot:
// graft.dev/inject written where graft does not read it, or with a value
// that does not do what it seems to.
func podWarnings(spot manifest.PodSpot) []string {
	var out []string
	meta := manifest.MapGet(spot.Holder, "metadata")
	at := manifest.JoinPath(spot.Path, "metadata")
	if a := manifest.MapGet(manifest.MapGet(meta, "annotations"), names.Inject); a != nil {
		out = append(out, fmt.Sprintf("annotation %s=%s has no effect: graft reads the label (Istio and Linkerd read an annotation); to opt out, set %s.labels[%q] to \"false\"",
			names.Inject, scalarText(a), at, names.Inject))
	}
	if l := manifest.MapGet(manifest.MapGet(meta, "labels"), names.Inject); l != nil {
		switch v := l.Value; {
		case !manifest.IsJSONString(l):
			out = append(out, fmt.Sprintf("label %s: %s is not a string, and label values must be: the API server refuses it; write \"false\" (quoted) to opt out",
				names.Inject, scalarText(l)))
		case v == "false":
		case audit.OptOutLike(v):
			out = append(out, fmt.Sprintf("label %s=%s does not opt out: only the exact value \"false\" does; graft injects this Pod", names.Inject, v))
		default:
			out = append(out, fmt.Sprintf("label %s=%s on a Pod has no effect: only \"false\" (opt out) is read there; the profile comes from the namespace's label", names.Inject, v))
		}
	}
	if spot.IsPod {
		return out
	}
	// On the workload itself rather than on its Pod template.
	own := manifest.MapGet(spot.Object, "metadata")
	for _, where := range []string{"labels", "annotations"} {
		if v := manifest.MapGet(manifest.MapGet(own, where), names.Inject); v != nil {
			out = append(out, fmt.Sprintf("%s %s=%s on the %s itself has no effect: graft reads the Pod template's labels (%s.labels)",
				strings.TrimSuffix(where, "s"), names.Inject, scalarText(v), manifest.MapString(spot.Object, "kind"), at))
		}
	}
	return out
}

// scalarText shows a node's value for a message.
func scalarText(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return manifest.KindName(n)
}
