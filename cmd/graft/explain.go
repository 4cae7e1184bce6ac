package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newExplainCmd() *cobra.Command {
	var f offlineFlags
	cmd := &cobra.Command{
		Use:   "explain -f pod.yaml [flags]",
		Short: "Show what the webhook would decide for a Pod, and why",
		Long: `explain runs each Pod (or workload's Pod template) of the input through the
engine, as graft serve would, and shows the decision and its reason, the
profile and templates chosen, every template parameter with its value and
where it came from (default, profile or Pod annotation), the warnings, and
the patch. -o json gives one JSON object per Pod, for machines.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, docs, err := f.open(cmd)
			if err != nil {
				return err
			}
			var out bytes.Buffer
			var errs []error
			n := 0
			for _, d := range docs {
				spots, err := findPods(d)
				if err != nil {
					errs = append(errs, &docError{source: d.source, index: d.index, err: err})
					continue
				}
				for _, s := range spots {
					ex, err := a.explain(d, s)
					if err != nil {
						errs = append(errs, &docError{source: d.source, index: d.index, what: s.what, err: err})
						continue
					}
					if f.output == "json" {
						err = writeExplanationJSON(&out, ex)
					} else {
						if n > 0 {
							out.WriteByte('\n')
						}
						err = writeExplanationText(&out, ex)
					}
					if err != nil {
						return err
					}
					n++
				}
			}
			if len(errs) > 0 {
				return errors.Join(errs...)
			}
			if n == 0 {
				return errors.New("no Pods or Pod templates in the input")
			}
			_, err = cmd.OutOrStdout().Write(out.Bytes())
			return err
		},
	}
	f.register(cmd, "text", "json")
	return cmd
}

// explained is one Pod's explanation, as -o json prints it.
type explained struct {
	Source    string                       `json:"source"`
	Document  int                          `json:"document"`
	Object    string                       `json:"object"`
	Namespace string                       `json:"namespace"`
	Decision  string                       `json:"decision"`
	Reason    string                       `json:"reason"`
	Profile   string                       `json:"profile"`
	Revision  string                       `json:"revision"`
	Tag       string                       `json:"tag,omitempty"`
	Templates []string                     `json:"templates"`
	Params    []explainedParam             `json:"params"`
	Warnings  []string                     `json:"warnings"`
	Message   string                       `json:"message,omitempty"`
	Patch     json.RawMessage              `json:"patch"`
	patchOps  []map[string]json.RawMessage `json:"-"`
}

type explainedParam struct {
	Template string `json:"template"`
	Param    string `json:"param"`
	Value    string `json:"value"`
	Source   string `json:"source"`
}

func (a *admitter) explain(d *document, spot podSpot) (*explained, error) {
	pod, err := podJSON(spot)
	if err != nil {
		return nil, err
	}
	body, err := a.review(spot, pod)
	if err != nil {
		return nil, err
	}
	ex, err := a.engine.Explain(body, a.opts)
	if err != nil {
		return nil, err
	}
	ns, _ := a.namespaceFor(spot) // review checked it
	out := &explained{
		Source:    d.source,
		Document:  d.index,
		Object:    spot.what,
		Namespace: ns,
		Decision:  ex.Result.Decision.String(),
		Reason:    ex.Result.Reason.String(),
		Profile:   ex.Profile,
		Revision:  ex.Result.Revision,
		Tag:       ex.Selection.Tag,
		Templates: nonNil(ex.Templates),
		Params:    []explainedParam{},
		Warnings:  nonNil(ex.Warnings),
		Message:   ex.Message,
		Patch:     json.RawMessage("[]"),
	}
	for _, p := range ex.Params {
		out.Params = append(out.Params, explainedParam{Template: p.Template, Param: p.Param, Value: p.Value, Source: p.Source})
	}
	if len(ex.Patch) > 0 {
		out.Patch = json.RawMessage(ex.Patch)
		if err := json.Unmarshal(ex.Patch, &out.patchOps); err != nil {
			return nil, fmt.Errorf("engine patch: %w", err)
		}
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func writeExplanationJSON(w *bytes.Buffer, ex *explained) error {
	b, err := json.MarshalIndent(ex, "", "  ")
	if err != nil {
		return err
	}
	w.Write(b)
	w.WriteByte('\n')
	return nil
}

func writeExplanationText(w io.Writer, ex *explained) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s: document %d: %s in namespace %s\n", ex.Source, ex.Document, ex.Object, ex.Namespace)
	fmt.Fprintf(tw, "  decision:\t%s\n", ex.Decision)
	fmt.Fprintf(tw, "  reason:\t%s\n", ex.Reason)
	if ex.Message != "" {
		fmt.Fprintf(tw, "  message:\t%s\n", ex.Message)
	}
	fmt.Fprintf(tw, "  profile:\t%s\n", ex.Profile)
	fmt.Fprintf(tw, "  revision:\t%s\n", ex.Revision)
	fmt.Fprintf(tw, "  tag:\t%s\n", orNone(ex.Tag))
	fmt.Fprintf(tw, "  templates:\t%s\n", orNone(strings.Join(ex.Templates, ", ")))
	if err := tw.Flush(); err != nil {
		return err
	}
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
	if len(ex.patchOps) == 0 {
		fmt.Fprintln(w, "  patch: none")
		return nil
	}
	fmt.Fprintf(w, "  patch: %d operations\n", len(ex.patchOps))
	for _, op := range ex.patchOps {
		line := "    " + jsonText(op["op"]) + " " + jsonText(op["path"])
		if from, ok := op["from"]; ok {
			line += " from " + jsonText(from)
		}
		if v, ok := op["value"]; ok {
			var b bytes.Buffer
			if err := json.Compact(&b, v); err != nil {
				return err
			}
			line += " " + b.String()
		}
		fmt.Fprintln(w, line)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// jsonText shows a JSON string without quotes, anything else as it is.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
