package main

import (
	"bytes"
	"errors"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/manifest"
)

func newExplainCmd() *cobra.Command {
	var f offlineFlags
	var cf clusterFlags
	cmd := &cobra.Command{
		Use:   "explain [-f] FILE|DIR|- ... | KIND/NAME [flags]",
		Short: "Show what the webhook would decide for a Pod, and why",
		Long: `explain runs each Pod (or workload's Pod template) of the input through the
engine, as graft serve would be called for it, and shows whether its
namespace selects graft and with which profile, the decision and its
reason, the templates chosen, every template parameter with its value and
where it came from (default, profile or Pod annotation), the warnings, and
the patch, as YAML, with paths in the manifest's object. -o json gives one
JSON object per Pod, for machines.

With KIND/NAME (pod, deploy, sts, ds, rs, job, cronjob, as kubectl
spells them) instead of files, explain reads the object and its
Namespace from the cluster (--kubeconfig, -n) and explains the Pod, or
the Pod the workload would create now, with the namespace's labels; for
a Pod it adds what graft audit says of it.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if kind, name, ok := liveRef(args[0]); ok {
					return explainLive(cmd, &f, &cf, kind, name)
				}
			}
			run, err := f.open(cmd, args)
			if err != nil {
				return err
			}
			var out bytes.Buffer
			var errs []error
			n := 0
			for _, d := range run.docs {
				spots, err := manifest.FindPods(d)
				if err != nil {
					errs = append(errs, d.WrapError("", err))
					continue
				}
				for _, s := range spots {
					if s.Foreign != "" {
						reportNoTemplate(d, s, run.report)
						continue
					}
					ex, err := run.admitter.explain(d, s, run.report)
					if err != nil {
						errs = append(errs, d.WrapError(s.What, err))
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
	cf.register(cmd)
	return cmd
}

// explained is one Pod's explanation, as -o json prints it.
type explained struct {
	Source    string `json:"source"`
	Document  int    `json:"document"`
	Object    string `json:"object"`
	Namespace string `json:"namespace"`
	// Label is the namespace's graft.dev/inject value; LabelFrom says
	// where the namespace's labels came from (see selection).
	Label     string             `json:"label"`
	LabelFrom string             `json:"labelFrom"`
	Decision  string             `json:"decision"`
	Reason    string             `json:"reason"`
	Profile   string             `json:"profile"`
	Revision  string             `json:"revision"`
	Tag       string             `json:"tag,omitempty"`
	Templates []string           `json:"templates"`
	Params    []explainedParam   `json:"params"`
	Warnings  []string           `json:"warnings"`
	Message   string             `json:"message,omitempty"`
	Patch     []manifest.PatchOp `json:"patch"`
	// Audit is a live Pod's audit class (graft explain pod/NAME).
	Audit    *explainedAudit `json:"audit,omitempty"`
	excluded bool            // the namespace is never injected
}

// explainedAudit is what graft audit says of a live Pod.
type explainedAudit struct {
	Class    string `json:"class"`
	Cause    string `json:"cause,omitempty"`
	Revision string `json:"revision,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

type explainedParam struct {
	Template string `json:"template"`
	Param    string `json:"param"`
	Value    string `json:"value"`
	Source   string `json:"source"`
}

// explain explains the Pod at spot: the namespace's selection, then the
// engine's answer, with graft's own warnings about the manifest.
func (a *admitter) explain(d *manifest.Document, spot manifest.PodSpot, rep *reporter) (*explained, error) {
	out := &explained{
		Source:    d.Source(),
		Document:  d.Index(),
		Object:    spot.What,
		Templates: []string{},
		Params:    []explainedParam{},
		Warnings:  []string{},
		Patch:     []manifest.PatchOp{},
	}
	if spot.Holder == nil {
		ns, err := a.namespaceFor(spot)
		out.Namespace, out.Decision, out.Reason, out.Message = ns, "no-pod-template", "none", spot.NoTemplate
		return out, err
	}
	ns, sel, body, err := a.request(spot)
	if err != nil {
		return nil, err
	}
	out.Namespace, out.Label, out.LabelFrom = ns, sel.label, sel.from
	out.excluded = sel.reason == "namespace-excluded"
	out.Warnings = append(out.Warnings, podWarnings(spot)...)
	if sel.from == fromAssumed {
		rep.note(a.sel.assumption(ns))
	}
	if body == nil {
		out.Decision, out.Reason, out.Message = "not-selected", sel.reason, sel.why
		return out, nil
	}
	ex, err := a.engine.Explain(body, sel.options())
	if err != nil {
		return nil, err
	}
	out.fill(ex)
	if len(ex.Patch) > 0 {
		if out.Patch, err = spot.DocumentOps(ex.Patch); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fill takes the engine's explanation, all but the patch (whose paths
// depend on where the Pod was read).
func (out *explained) fill(ex *inject.Explanation) {
	out.Decision, out.Reason = ex.Result.Decision.String(), ex.Result.Reason.String()
	out.Profile, out.Message = ex.Profile, ex.Message
	out.Revision, out.Tag = ex.Result.Revision, ex.Selection.Tag
	out.Templates = append(out.Templates, ex.Templates...)
	out.Warnings = append(out.Warnings, ex.Warnings...)
	for _, p := range ex.Params {
		out.Params = append(out.Params, explainedParam{Template: p.Template, Param: p.Param, Value: p.Value, Source: p.Source})
	}
}
