package offline

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/internal/manifest"
	"github.com/graftdev/graft/internal/names"
)

// WriteExplanation writes ex as text, or with jsonOut as an indented
// JSON object and a line break.
func WriteExplanation(w io.Writer, ex *Explanation, jsonOut bool) error {
	if !jsonOut {
		return writeExplanationText(w, ex)
	}
	b, err := json.MarshalIndent(ex, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func writeExplanationText(w io.Writer, ex *Explanation) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if ex.Source == fromCluster {
		fmt.Fprintf(tw, "%s in namespace %s (read from the cluster)\n", ex.Object, ex.Namespace)
	} else {
		fmt.Fprintf(tw, "%s: document %d: %s in namespace %s\n", ex.Source, ex.Document, ex.Object, ex.Namespace)
	}
	if ex.Decision != "no-pod-template" {
		fmt.Fprintf(tw, "  label:\t%s\n", labelText(ex))
	}
	fmt.Fprintf(tw, "  decision:\t%s\n", ex.Decision)
	fmt.Fprintf(tw, "  reason:\t%s\n", ex.Reason)
	if ex.Message != "" {
		fmt.Fprintf(tw, "  message:\t%s\n", ex.Message)
	}
	fmt.Fprintf(tw, "  profile:\t%s\n", orNone(ex.Profile))
	if ex.Revision != "" {
		fmt.Fprintf(tw, "  revision:\t%s\n", ex.Revision)
		fmt.Fprintf(tw, "  tag:\t%s\n", orNone(ex.Tag))
	}
	fmt.Fprintf(tw, "  templates:\t%s\n", orNone(strings.Join(ex.Templates, ", ")))
	for _, k := range ex.Kept {
		fmt.Fprintf(tw, "  kept out:\t%s: %s (onConflict: keep)\n", k.Template, k.Why)
	}
	if a := ex.Audit; a != nil {
		fmt.Fprintf(tw, "  audit:\t%s\n", a.text())
	}
	if ex.Pods != nil {
		fmt.Fprintf(tw, "  pods:\t%s\n", podCounts(ex.Pods))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeDiffering(w, ex.Pods)
	if len(ex.Params) == 0 {
		fmt.Fprintln(w, "  parameters: none")
	} else {
		fmt.Fprintln(w, "  parameters:")
		for _, p := range ex.Params {
			fmt.Fprintf(tw, "    %s.%s\t%s\t(%s)\n", p.Template, p.Param, p.Value, p.Source)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(ex.Warnings) == 0 {
		fmt.Fprintln(w, "  warnings: none")
	} else {
		fmt.Fprintln(w, "  warnings:")
		for _, warn := range ex.Warnings {
			fmt.Fprintf(w, "    - %s\n", warn)
		}
	}
	if len(ex.Patch) == 0 {
		fmt.Fprintln(w, "  patch: none")
		return nil
	}
	lines, err := manifest.PatchYAML(ex.Patch, 4)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  patch: %d operations\n%s\n", len(ex.Patch), strings.Join(lines, "\n"))
	return nil
}

// labelText says which graft.dev/inject label selected the Pod's
// namespace, and where it was read.
func labelText(ex *Explanation) string {
	if ex.excluded {
		return "not read: the namespace is never injected"
	}
	label := "none"
	if ex.Label != "" {
		label = names.Inject + "=" + ex.Label
	}
	switch ex.LabelFrom {
	case fromNamespace:
		return label + " (its Namespace object in the input)"
	case fromFlag:
		return label + " (" + fromFlag + ")"
	case fromCluster:
		return label + " (its Namespace in the cluster)"
	}
	return label + " (assumed: no Namespace object in the input, no " + fromFlag + ")"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func (a *ExplainedAudit) text() string {
	class := a.Class
	if a.Cause != "" {
		class += " (" + a.Cause + ")"
	}
	if a.Detail != "" {
		class += ": " + a.Detail
	}
	return class
}

// podCounts is how many of a workload's Pods are in each audit class.
func podCounts(pods []ExplainedPod) string {
	if len(pods) == 0 {
		return "none"
	}
	n := map[string]int{}
	for _, p := range pods {
		n[p.Class]++
	}
	var parts []string
	for _, c := range audit.Classes() {
		if n[string(c)] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n[string(c)]))
		}
	}
	return fmt.Sprintf("%d (%s)", len(pods), strings.Join(parts, ", "))
}

// maxDiffering bounds the Pods the text lists as differing from what
// graft would make of them; -o json lists every Pod.
const maxDiffering = 20

// writeDiffering lists the workload's Pods that differ from what graft
// would make of them now, with their audit class.
func writeDiffering(w io.Writer, pods []ExplainedPod) {
	var differ []ExplainedPod
	for _, p := range pods {
		if audit.Class(p.Class).Differs() {
			differ = append(differ, p)
		}
	}
	if len(differ) == 0 {
		return
	}
	fmt.Fprintf(w, "  pods that differ from what graft would inject now:\n")
	for i, p := range differ {
		if i == maxDiffering {
			fmt.Fprintf(w, "    ... and %d more (-%s json lists every Pod)\n", len(differ)-maxDiffering, names.FlagOutputShort)
			break
		}
		fmt.Fprintf(w, "    - %s: %s\n", p.Name, p.text())
	}
}
