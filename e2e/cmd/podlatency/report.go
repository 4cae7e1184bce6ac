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
// next to the same for Pods of a namespace it does not select. (Version
// 1.36 observes apiserver_validating_admission_policy_check_duration_seconds
// only for denials and errors, so it says nothing of an admitted Pod.)
type Guarantee struct {
	GraftUS float64 `json:"graft_namespace_us_per_create"`
	OtherUS float64 `json:"unselected_namespace_us_per_create"`
}

// Target is one of issue 11's targets and how this run did.
type Target struct {
	Figure   string `json:"figure"`
	Target   string `json:"target"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

type report struct {
	When       string    `json:"when"`
	Setup      string    `json:"setup"`
	Sequential []Row     `json:"sequential"`
	Burst      []Row     `json:"burst,omitempty"`
	Guarantee  Guarantee `json:"guarantee_policy"`
	// GraftPatchBytes is the mean size of graft's patch (before base64).
	GraftPatchBytes float64  `json:"graft_patch_bytes"`
	Targets         []Target `json:"targets"`
}

const setupText = "kube-apiserver v1.36.3 with its default admission plugins (ServiceAccount and LimitRanger on; " +
	"each namespace's default ServiceAccount exists, so every Pod gets a projected token volume), etcd, " +
	"and the webhooks on loopback, unpinned; the small corpus Pod"

func newReport(vs []variant, seq, burst []phaseResult, policies []histo.Histogram) *report {
	r := &report{When: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Setup: setupText}
	r.Sequential = rows(vs, seq)
	if burst != nil {
		r.Burst = rows(vs, burst)
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

// targets holds the run against issue 11's targets.
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
	if okG {
		c := r.Guarantee.GraftUS / 1000
		out = append(out, Target{"guarantee policy per create (ValidatingAdmissionPolicy plugin)", "<= 0.1 ms", fmt.Sprintf("%.3f ms", c), c <= 0.1})
	}
	if okG && okM && m.P50OverUS > 0 {
		ratio := float64(g.P50OverUS) / float64(m.P50OverUS)
		out = append(out, Target{"graft p50 overhead / minimal webhook's", "<= 1.15",
			fmt.Sprintf("%.2f (%s / %s)", ratio, ms(g.P50OverUS), ms(m.P50OverUS)), ratio <= 1.15})
	}
	if okG && okP {
		diff := g.P50OverUS - p.P50OverUS
		out = append(out, Target{"graft p50 overhead - MutatingAdmissionPolicy's", "<= 1.0 ms",
			fmt.Sprintf("%s (%s - %s)", ms(diff), ms(g.P50OverUS), ms(p.P50OverUS)), diff <= 1000})
	}
	gb, okGB := row(r.Burst, "graft")
	mb, okMB := row(r.Burst, "minimal")
	if okGB && okMB && mb.P99US > 0 {
		ratio := float64(gb.P99US) / float64(mb.P99US)
		out = append(out, Target{"graft burst p99 / minimal webhook's", "<= 1.2",
			fmt.Sprintf("%.2f (%s / %s)", ratio, ms(gb.P99US), ms(mb.P99US)), ratio <= 1.2})
	}
	return out
}

func (r *report) write(dir string, stdout io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "e2e-latest.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	md := r.markdown()
	if err := os.WriteFile(filepath.Join(dir, "e2e-latest.md"), []byte(md), 0o644); err != nil {
		return err
	}
	_, err = io.WriteString(stdout, md)
	return err
}

func (r *report) markdown() string {
	var md strings.Builder
	fmt.Fprintf(&md, "## Pod create latency through kube-apiserver (%s)\n\n", r.When)
	md.WriteString("Set-up: " + r.Setup + ". `graft` is the shipped webhook and ValidatingAdmissionPolicy; " +
		"`graft-bare` the same webhook without the policy; `minimal` a standard-library webhook answering every review with a fixed patch adding one init container " +
		"(reinvocationPolicy: Never); `policy` a MutatingAdmissionPolicy (JSONPatch) adding the same init containers " +
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
	table("Sequential: one client, the variants taking turns", r.Sequential)
	if r.Burst != nil {
		table("Burst: concurrent clients, each variant in turn", r.Burst)
	}
	fmt.Fprintf(&md, "graft's guarantee policy: the ValidatingAdmissionPolicy plugin took %.3f ms per create of graft's Pods "+
		"and %.3f ms per create in a namespace it does not select (apiserver_admission_controller_admission_duration_seconds, "+
		"each variant's Pods created apart). graft's patch: %.0f bytes on average.\n\n",
		r.Guarantee.GraftUS/1000, r.Guarantee.OtherUS/1000, r.GraftPatchBytes)
	md.WriteString("| target | wanted | measured | met |\n|---|---|---|---|\n")
	for _, t := range r.Targets {
		met := "no"
		if t.Met {
			met = "yes"
		}
		fmt.Fprintf(&md, "| %s | %s | %s | %s |\n", t.Figure, t.Target, t.Measured, met)
	}
	return md.String()
}

func ms(us int64) string { return fmt.Sprintf("%.2f ms", float64(us)/1000) }
