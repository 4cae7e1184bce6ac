package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/graftdev/graft/e2e/internal/histo"
)

// Row is one variant's figures in one phase, times in microseconds. The
// API server's own figures: WebhookUS is the mean duration of one call to
// the variant's webhook (or one evaluation of its MutatingAdmissionPolicy)
// and CallsPerCreate how many it made per Pod create.
type Row struct {
	Variant        string  `json:"variant"`
	Pods           int     `json:"pods"`
	Failed         int     `json:"failed,omitempty"`
	P50US          int64   `json:"p50_us"`
	P90US          int64   `json:"p90_us"`
	P99US          int64   `json:"p99_us"`
	MaxUS          int64   `json:"max_us"`
	MeanUS         int64   `json:"mean_us"`
	P50OverUS      int64   `json:"p50_overhead_us"`
	P99OverUS      int64   `json:"p99_overhead_us"`
	WebhookUS      int64   `json:"apiserver_call_us,omitempty"`
	CallsPerCreate float64 `json:"calls_per_create,omitempty"`
}

// Guarantee is what graft's ValidatingAdmissionPolicy costs per Pod create
// where it applies, read from kube-apiserver's
// apiserver_admission_controller_admission_duration_seconds for the
// ValidatingAdmissionPolicy plugin over creates of graft's Pods alone,
// next to the same for graft's Pods under the minimal policy that only
// reads object.spec.initContainers (the floor of any check of the
// sidecars), and for Pods of a namespace neither selects. (The API server
// observes apiserver_validating_admission_policy_check_duration_seconds
// only for denials and errors, so it says nothing of an admitted Pod.)
// The figures pool the rounds; Rounds holds each round, by which the
// ratio to the floor is judged.
type Guarantee struct {
	GraftUS float64          `json:"graft_namespace_us_per_create"`
	FloorUS float64          `json:"floor_namespace_us_per_create"`
	OtherUS float64          `json:"unselected_namespace_us_per_create"`
	Rounds  []GuaranteeRound `json:"rounds,omitempty"`
}

// GuaranteeRound is one round of the policy phase.
type GuaranteeRound struct {
	GraftUS float64 `json:"graft_us_per_create"`
	FloorUS float64 `json:"floor_us_per_create"`
	Ratio   float64 `json:"graft_over_floor"`
}

// Target is one of the targets of issues 11 and 26 and how this run did.
type Target struct {
	Figure   string `json:"figure"`
	Target   string `json:"target"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

type report struct {
	When string `json:"when"`
	// Kubernetes is the version kube-apiserver reported on /version.
	Kubernetes string `json:"kubernetes_version"`
	Setup      string `json:"setup"`
	// Sequential and Burst pool every round's creates; the Rounds hold
	// each round, by which the targets are judged.
	Sequential       []Row     `json:"sequential"`
	SequentialRounds [][]Row   `json:"sequential_rounds"`
	Burst            []Row     `json:"burst,omitempty"`
	BurstRounds      [][]Row   `json:"burst_rounds,omitempty"`
	Guarantee        Guarantee `json:"guarantee_policy"`
	// GraftPatchBytes is the mean size of graft's patch (before base64).
	GraftPatchBytes float64  `json:"graft_patch_bytes"`
	Targets         []Target `json:"targets"`
}

// setupText is the set-up, after the API server's version.
const setupText = " with its default admission plugins (ServiceAccount and LimitRanger on; " +
	"each namespace's default ServiceAccount, made by kube-controller-manager, exists, so every Pod gets a projected token volume), etcd 3.6, " +
	"no nodes (nothing schedules or runs the Pods: admission alone is measured), " +
	"and the webhooks on loopback, unpinned; the small corpus Pod"

// newReport makes the report of a run on kube-apiserver version (what it
// reported on /version).
func newReport(version string, vs []variant, seqRounds, burst [][]phaseResult, policyRounds [][]histo.Histogram) *report {
	r := &report{When: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Kubernetes: version, Setup: "kube-apiserver " + version + setupText}
	seq := pooled(seqRounds)
	r.Sequential = rows(vs, seq)
	for _, res := range seqRounds {
		r.SequentialRounds = append(r.SequentialRounds, rows(vs, res))
	}
	if len(burst) > 0 {
		r.Burst = rows(vs, pooled(burst))
		for _, res := range burst {
			r.BurstRounds = append(r.BurstRounds, rows(vs, res))
		}
	}
	policies := make([]histo.Histogram, len(vs))
	for _, round := range policyRounds {
		var gr GuaranteeRound
		for i, v := range vs {
			policies[i] = policies[i].Plus(round[i])
			mean, err := round[i].Mean()
			if err != nil {
				continue
			}
			switch v.name {
			case "graft":
				gr.GraftUS = mean * 1e6
			case "graft-floor":
				gr.FloorUS = mean * 1e6
			}
		}
		if gr.FloorUS > 0 {
			gr.Ratio = gr.GraftUS / gr.FloorUS
		}
		r.Guarantee.Rounds = append(r.Guarantee.Rounds, gr)
	}
	for i, v := range vs {
		mean, err := policies[i].Mean()
		if err != nil {
			continue
		}
		switch v.name {
		case "graft":
			r.Guarantee.GraftUS = mean * 1e6
			if m, err := seq[i].m.patch.Mean(); err == nil {
				r.GraftPatchBytes = m
			}
		case "graft-floor":
			r.Guarantee.FloorUS = mean * 1e6
		case "none":
			r.Guarantee.OtherUS = mean * 1e6
		}
	}
	r.Targets = targets(r)
	return r
}

// rows summarises each variant's latencies and its webhook's (or
// policy's) figures from the API server.
func rows(vs []variant, res []phaseResult) []Row {
	out := make([]Row, len(vs))
	for i, v := range vs {
		d := slices.Clone(res[i].lat)
		slices.Sort(d)
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		r := Row{Variant: v.name, Pods: len(d), Failed: res[i].failed, P50US: pct(d, 50), P90US: pct(d, 90), P99US: pct(d, 99)}
		if len(d) > 0 {
			r.MeanUS = (sum / time.Duration(len(d))).Microseconds()
			r.MaxUS = d[len(d)-1].Microseconds()
		}
		var h histo.Histogram
		switch {
		case v.webhook != "":
			h = res[i].m.webhooks[v.webhook]
		case v.policy != "":
			h = res[i].m.policies[v.policy]
		}
		if mean, err := h.Mean(); err == nil && len(d) > 0 {
			r.WebhookUS = int64(mean * 1e6)
			r.CallsPerCreate = h.Total / float64(len(d))
		}
		out[i] = r
	}
	for i := range out {
		out[i].P50OverUS = out[i].P50US - out[0].P50US
		out[i].P99OverUS = out[i].P99US - out[0].P99US
	}
	return out
}

// pct is the nearest-rank percentile of sorted d, in microseconds.
func pct(d []time.Duration, p float64) int64 {
	if len(d) == 0 {
		return 0
	}
	i := int(float64(len(d))*p/100+0.999999) - 1
	return d[min(max(i, 0), len(d)-1)].Microseconds()
}

func row(rs []Row, name string) (Row, bool) {
	i := slices.IndexFunc(rs, func(r Row) bool { return r.Variant == name })
	if i < 0 {
		return Row{}, false
	}
	return rs[i], true
}

// targets holds the run against the targets of issues 11 (the webhook)
// and 26 (graft export's policies beside a hand-written one).
func targets(r *report) []Target {
	var out []Target
	g, okG := row(r.Sequential, "graft")
	m, okM := row(r.Sequential, "minimal")
	p, okP := row(r.Sequential, "policy")
	if okG {
		out = append(out, Target{"graft calls per Pod create (sequential)", "1.00", fmt.Sprintf("%.2f", g.CallsPerCreate), g.CallsPerCreate == 1})
	}
	if gb, ok := row(r.Burst, "graft"); ok {
		out = append(out, Target{"graft calls per Pod create (burst)", "1.00", fmt.Sprintf("%.2f", gb.CallsPerCreate), gb.CallsPerCreate == 1})
	}
	var ratios []float64
	for _, gr := range r.Guarantee.Rounds {
		if gr.Ratio > 0 {
			ratios = append(ratios, gr.Ratio)
		}
	}
	if okG && len(ratios) > 0 {
		med := median(ratios)
		out = append(out, Target{"guarantee policy per create / minimal policy reading initContainers (ValidatingAdmissionPolicy plugin, median of rounds)", "<= 1.50",
			fmt.Sprintf("%.2f (rounds: %s; pooled %.3f ms / %.3f ms)", med, join(ratios, "%.2f"), r.Guarantee.GraftUS/1000, r.Guarantee.FloorUS/1000), med <= 1.5})
	}
	if okG && okM {
		if ratios := perRound(r.SequentialRounds, func(g, m Row) (float64, bool) {
			return float64(g.P50OverUS) / float64(m.P50OverUS), m.P50OverUS > 0
		}, "graft", "minimal"); len(ratios) > 0 {
			med := median(ratios)
			out = append(out, Target{"graft p50 overhead / minimal webhook's (median of rounds)", "<= 1.15",
				fmt.Sprintf("%.2f (rounds: %s; pooled %s / %s)", med, join(ratios, "%.2f"), ms(g.P50OverUS), ms(m.P50OverUS)), med <= 1.15})
		}
	}
	if diffs := perRound(r.SequentialRounds, func(g, p Row) (float64, bool) {
		return float64(g.P50OverUS-p.P50OverUS) / 1000, true
	}, "graft", "policy"); okG && okP && len(diffs) > 0 {
		med := median(diffs)
		out = append(out, Target{"graft p50 overhead - MutatingAdmissionPolicy's (median of rounds)", "<= 1.0 ms",
			fmt.Sprintf("%.2f ms (rounds: %s; pooled %s - %s)", med, join(diffs, "%.2f"), ms(g.P50OverUS), ms(p.P50OverUS)), med <= 1.0})
	}
	if x, ok := row(r.Sequential, "graft-export"); ok {
		// The API server counts each evaluation of the mutation, not of
		// the match conditions that spare the reinvocation pass.
		out = append(out, Target{"graft-export MutatingAdmissionPolicy evaluations per Pod create (sequential)", "1.00",
			fmt.Sprintf("%.2f", x.CallsPerCreate), x.CallsPerCreate == 1})
		if ratios := perRound(r.SequentialRounds, func(x, p Row) (float64, bool) {
			return float64(x.P50OverUS) / float64(p.P50OverUS), p.P50OverUS > 0
		}, "graft-export", "policy"); okP && len(ratios) > 0 {
			med := median(ratios)
			out = append(out, Target{"graft-export p50 overhead / hand-written MutatingAdmissionPolicy's (median of rounds)", "<= 1.25",
				fmt.Sprintf("%.2f (rounds: %s; pooled %s / %s)", med, join(ratios, "%.2f"), ms(x.P50OverUS), ms(p.P50OverUS)), med <= 1.25})
		}
	}
	if ratios := perRound(r.BurstRounds, func(g, m Row) (float64, bool) {
		return float64(g.P99US) / float64(m.P99US), m.P99US > 0
	}, "graft", "minimal"); len(ratios) > 0 {
		med := median(ratios)
		out = append(out, Target{"graft burst p99 / minimal webhook's (median of rounds)", "<= 1.2",
			fmt.Sprintf("%.2f (rounds: %s)", med, join(ratios, "%.2f")), med <= 1.2})
	}
	return out
}

// perRound is f of variants a and b in each round that has both and
// where f says its figure is defined.
func perRound(rounds [][]Row, f func(a, b Row) (float64, bool), a, b string) []float64 {
	var out []float64
	for _, round := range rounds {
		ra, okA := row(round, a)
		rb, okB := row(round, b)
		if !okA || !okB {
			continue
		}
		if x, ok := f(ra, rb); ok {
			out = append(out, x)
		}
	}
	return out
}

// median of xs (callers pass at least one); the mean of the middle two for an even count.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

func join(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, ", ")
}

func (r *report) write(dir string, stdout io.Writer) error {
	return writeResults(dir, "e2e-latest", r, r.markdown(), stdout)
}

// writeResults writes data as <name>.json and md as <name>.md in dir, and
// md to stdout.
func writeResults(dir, name string, data any, md string, stdout io.Writer) error {
	b, err := json.MarshalIndent(data, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(md), 0o644); err != nil {
		return err
	}
	_, err = io.WriteString(stdout, md)
	return err
}

// targetsTable writes ts as a Markdown table.
func targetsTable(md *strings.Builder, ts []Target) {
	md.WriteString("| target | wanted | measured | met |\n|---|---|---|---|\n")
	for _, t := range ts {
		met := "no"
		if t.Met {
			met = "yes"
		}
		fmt.Fprintf(md, "| %s | %s | %s | %s |\n", t.Figure, t.Target, t.Measured, met)
	}
}

func (r *report) markdown() string {
	var md strings.Builder
	fmt.Fprintf(&md, "## Pod create latency through kube-apiserver (%s)\n\n", r.When)
	md.WriteString("Set-up: " + r.Setup + ". `graft` is the shipped webhook and ValidatingAdmissionPolicy; " +
		"`graft-bare` the same webhook without the policy; `graft-floor` the same webhook with, instead of graft's policy, the minimal one that only reads object.spec.initContainers; `minimal` a standard-library webhook (a process of its own) answering every review with a fixed patch adding one init container " +
		"(reinvocationPolicy: Never); `replay` that same server answering with graft's own patch for this Pod (computed once by graft's engine): " +
		"beside `minimal` it shows what the API server's handling of graft's larger patch (its annotations and label) costs, beside `graft` what graft's server costs; `policy` a MutatingAdmissionPolicy (JSONPatch) adding the same init containers " +
		"and volumes as graft's default profile; `graft-export` the policies `graft export` writes for that profile " +
		"(the same Pod as graft, and the parameter and final-state checks). graft and conventional also add annotations. " +
		"`API server per call` and `calls/create` are kube-apiserver's own figures " +
		"(apiserver_admission_webhook_admission_duration_seconds; for the policies, " +
		"apiserver_mutating_admission_policy_check_duration_seconds).\n\n")
	table := func(title string, rs []Row) {
		fmt.Fprintf(&md, "### %s\n\n", title)
		md.WriteString("| variant | pods | failed | p50 | p90 | p99 | max | mean | p50 overhead | p99 overhead | API server per call | calls/create |\n")
		md.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, x := range rs {
			call, calls := "—", "—"
			if x.CallsPerCreate > 0 {
				call, calls = ms(x.WebhookUS), fmt.Sprintf("%.2f", x.CallsPerCreate)
			}
			fmt.Fprintf(&md, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Variant, x.Pods, x.Failed,
				ms(x.P50US), ms(x.P90US), ms(x.P99US), ms(x.MaxUS), ms(x.MeanUS), ms(x.P50OverUS), ms(x.P99OverUS), call, calls)
		}
		md.WriteString("\n")
	}
	table(fmt.Sprintf("Sequential: one client, the variants taking turns, %d rounds pooled", len(r.SequentialRounds)), r.Sequential)
	roundsTable(&md, "Sequential p50 overhead by round", r.Sequential, r.SequentialRounds, func(x Row) int64 { return x.P50OverUS })
	if r.Burst != nil {
		table(fmt.Sprintf("Burst: concurrent clients, each variant in turn, %d rounds pooled", len(r.BurstRounds)), r.Burst)
		roundsTable(&md, "Burst p99 by round (each round: every variant's burst once, the order rotating)", r.Burst, r.BurstRounds, func(x Row) int64 { return x.P99US })
	}
	fmt.Fprintf(&md, "graft's guarantee policy: the ValidatingAdmissionPolicy plugin took %.3f ms per create of graft's Pods, "+
		"%.3f ms per create of graft's Pods under the minimal policy that only reads object.spec.initContainers (`graft-floor`), "+
		"and %.3f ms per create in a namespace neither selects (apiserver_admission_controller_admission_duration_seconds, "+
		"each variant's Pods created apart, %d rounds pooled). graft's patch: %.0f bytes on average.\n\n",
		r.Guarantee.GraftUS/1000, r.Guarantee.FloorUS/1000, r.Guarantee.OtherUS/1000, len(r.Guarantee.Rounds), r.GraftPatchBytes)
	if len(r.Guarantee.Rounds) > 0 {
		md.WriteString("Guarantee policy by round (ms per create):\n\n| round | graft | floor | graft / floor |\n|--:|--:|--:|--:|\n")
		for i, gr := range r.Guarantee.Rounds {
			fmt.Fprintf(&md, "| %d | %.3f | %.3f | %.2f |\n", i+1, gr.GraftUS/1000, gr.FloorUS/1000, gr.Ratio)
		}
		md.WriteString("\n")
	}
	targetsTable(&md, r.Targets)
	return md.String()
}

// roundsTable writes a figure of each variant per round and its median.
func roundsTable(md *strings.Builder, title string, variants []Row, rounds [][]Row, fig func(Row) int64) {
	md.WriteString(title + ":\n\n| variant |")
	for i := range rounds {
		fmt.Fprintf(md, " %d |", i+1)
	}
	md.WriteString(" median |\n|---|" + strings.Repeat("--:|", len(rounds)+1) + "\n")
	for _, v := range variants {
		fmt.Fprintf(md, "| %s |", v.Variant)
		var xs []float64
		for _, round := range rounds {
			x, _ := row(round, v.Variant)
			xs = append(xs, float64(fig(x)))
			fmt.Fprintf(md, " %s |", ms(fig(x)))
		}
		fmt.Fprintf(md, " %s |\n", ms(int64(median(xs))))
	}
	md.WriteString("\n")
}

func ms(us int64) string { return fmt.Sprintf("%.2f ms", float64(us)/1000) }
