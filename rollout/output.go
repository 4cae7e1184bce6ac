package rollout

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/graftdev/graft/internal/names"
)

// PlanVersion is the apiVersion of `graft rollout -o json`; a change that
// removes or renames a field gets a new version.
const PlanVersion = "rollout.graft.dev/v1alpha1"

// jsonPlan is the -o json schema: kind RolloutPlan (--dry-run) or
// RolloutResult (--apply).
type jsonPlan struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Time       string      `json:"time"`
	DryRun     bool        `json:"dryRun"`
	Items      []Item      `json:"items"`
	Summary    jsonSummary `json:"summary"`
}

type jsonSummary struct {
	Owners  int            `json:"owners"`
	Pods    int            `json:"pods"`
	Actions map[Action]int `json:"actions"`
	States  map[State]int  `json:"states"`
	// Seconds is how long --apply took.
	Seconds float64 `json:"seconds,omitempty"`
}

// Write writes p in format "table" or "json". dryRun says whether it is
// a plan or a run's result; took is how long the run took (0 for a plan).
func Write(w io.Writer, format string, p *Plan, dryRun bool, start time.Time, took time.Duration) error {
	switch format {
	case "json":
		kind := "RolloutResult"
		if dryRun {
			kind = "RolloutPlan"
		}
		items := p.Items
		if items == nil {
			items = []Item{}
		}
		doc := jsonPlan{APIVersion: PlanVersion, Kind: kind, Time: start.UTC().Format(time.RFC3339), DryRun: dryRun, Items: items,
			Summary: jsonSummary{Owners: len(p.Items), Pods: p.pods(), Actions: map[Action]int{}, States: p.States(), Seconds: took.Seconds()}}
		for _, a := range []Action{Restart, InPlace, Report} {
			doc.Summary.Actions[a] = p.Count(a)
		}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return fmt.Errorf("rollout output: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "table":
		return writeTable(w, p, dryRun, took)
	}
	return fmt.Errorf("output format %q: want table or json", format)
}

func (p *Plan) pods() int {
	n := 0
	for _, it := range p.Items {
		n += len(it.Pods)
	}
	return n
}

// writeTable writes one line per owner, kubectl-style, and a summary.
func writeTable(w io.Writer, p *Plan, dryRun bool, took time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tOWNER\tACTION\tSTATE\tPODS\tWHY")
	for _, it := range p.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", it.Namespace, strings.ToLower(it.Kind)+"/"+it.Name, it.Action, it.State,
			len(it.Pods), why(&it))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	states := p.States()
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(states)) {
		parts = append(parts, fmt.Sprintf("%d %s", states[s], s))
	}
	what := "plan"
	if !dryRun {
		what = fmt.Sprintf("applied in %s", took.Round(100*time.Millisecond))
	}
	_, err := fmt.Fprintf(w, "\n%s: %d owners (%d restart, %d in place, %d reported), %d Pods: %s\n", what, len(p.Items),
		p.Count(Restart), p.Count(InPlace), p.Count(Report), p.pods(), orNone(strings.Join(parts, ", ")))
	if err == nil && dryRun && len(p.Items) > 0 {
		_, err = fmt.Fprintln(w, "nothing was changed: run with --"+names.FlagApply+" to act")
	}
	return err
}

func orNone(s string) string {
	if s == "" {
		return "nothing to do"
	}
	return s
}

// why is the table's last column: the outcome's message, else the reason
// an owner is reported, else what put it on the plan.
func why(it *Item) string {
	if it.Message != "" {
		return it.Message
	}
	if it.Why != "" {
		return it.Why
	}
	counts := map[string]int{}
	refused := map[Refusal]int{}
	var images []string
	for _, p := range it.Pods {
		c := string(p.Class)
		if p.Cause != "" {
			c += "/" + p.Cause
		}
		counts[c]++
		if p.Refusal != "" {
			refused[p.Refusal]++
		}
		if p.Upgrade != nil {
			for _, im := range p.Upgrade.Images {
				if s := im.Container + " " + im.From + " -> " + im.To; !slices.Contains(images, s) {
					images = append(images, s)
				}
			}
		}
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", c, counts[c]))
	}
	out := strings.Join(parts, ",")
	if len(images) > 0 {
		out += "; " + strings.Join(images, ", ")
	}
	if len(refused) > 0 {
		var rs []string
		for _, r := range slices.Sorted(maps.Keys(refused)) {
			rs = append(rs, fmt.Sprintf("%s=%d", r, refused[r]))
		}
		out += "; in place refused: " + strings.Join(rs, ",")
	}
	return out
}
