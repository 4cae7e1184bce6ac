package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Machine describes where the figures were measured.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go"`
	// Pinning says how servers and generator were placed on CPUs.
	Pinning string `json:"pinning"`
	Date    string `json:"date"`
}

// Peer names the report compares.
const (
	Graft        = "graft"
	Conventional = "conventional"
	Floor        = "floor"
)

// WriteMarkdown writes the report: machine, targets, then a table per
// corpus with graft's ratios to the other peers. notes are printed as a
// list (peers that did not start, corpora left out).
func WriteMarkdown(w io.Writer, m Machine, rows []Row, notes []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Load test: graft, conventional, floor\n\n")
	fmt.Fprintf(&b, "Measured %s on %s (%d cores), Linux %s, %s. %s\n\n", m.Date, m.CPU, m.Cores, m.Kernel, m.GoVersion, m.Pinning)
	b.WriteString("Peers: `graft` is the real binary; `conventional` is the same injection written with net/http, " +
		"encoding/json into k8s.io/api types and gomodules.xyz/jsonpatch CreatePatch; `floor` is a fasthttp TLS server " +
		"answering a fixed review of the same size as graft's, the cost of the transport alone. " +
		"Closed loop: C workers, each sending as soon as answered. Open loop: a fixed arrival rate, latency from the intended send time. " +
		"CPU is the server's user+system time per request; CPU % the server's and the generator's use of their core " +
		"(a generator near 100% means the figure is the generator's limit); RSS the server's peak resident set; " +
		"allocations from its Go runtime metrics (go_memstats_mallocs_total).\n\n")
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}
	writeTargets(&b, rows)
	for _, corpus := range orderOf(rows, func(r Row) string { return r.Corpus }) {
		var rs []Row
		for _, r := range rows {
			if r.Corpus == corpus {
				rs = append(rs, r)
			}
		}
		size := ""
		if rs[0].ReqBytes > 0 {
			size = fmt.Sprintf(" (%s request)", bytesString(float64(rs[0].ReqBytes)))
		}
		fmt.Fprintf(&b, "## %s%s\n\n", corpus, size)
		b.WriteString("| peer | mode | conc | rate | req/s | p50 | p90 | p99 | p99.9 | CPU µs/req | CPU % srv/gen | peak RSS MiB | allocs/req | resp | errors |\n")
		b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, r := range rs {
			rate := "—"
			if r.Mode == "open" {
				rate = fmt.Sprintf("%.0f", r.Rate)
			}
			allocs := "n/a"
			if r.AllocsPerReq >= 0 {
				allocs = fmt.Sprintf("%.0f", r.AllocsPerReq)
			}
			errs := fmt.Sprintf("%d", r.Errors)
			if r.Unsent > 0 {
				errs += fmt.Sprintf(" (+%d unsent)", r.Unsent)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %.0f | %s | %s | %s | %s | %.1f | %.0f/%.0f | %.1f | %s | %s | %s |\n",
				r.Peer, r.Mode, r.Concurrency, rate, r.RPS, us(r.P50US), us(r.P90US), us(r.P99US), us(r.P999US),
				r.CPUUSPerReq, r.ServerCPUPct, r.GenCPUPct, r.RSSMiB, allocs, bytesString(r.RespBytes), errs)
		}
		b.WriteString("\n")
		var profiles []string
		for _, r := range rs {
			if r.Profile != "" {
				profiles = append(profiles, fmt.Sprintf("[%s %s](%s)", r.Peer, r.Mode, r.Profile))
			}
		}
		if len(profiles) > 0 {
			fmt.Fprintf(&b, "CPU profiles (perf): %s.\n\n", strings.Join(profiles, ", "))
		}
		for _, mode := range orderOf(rs, func(r Row) string { return r.Mode }) {
			g, ok := find(rs, Graft, mode)
			if !ok {
				continue
			}
			var parts []string
			for _, other := range []string{Conventional, Floor} {
				o, ok := find(rs, other, mode)
				if !ok {
					continue
				}
				parts = append(parts, fmt.Sprintf("graft/%s: req/s ×%s, p99 ×%s, CPU/req ×%s", other,
					ratio(g.RPS, o.RPS), ratio(float64(g.P99US), float64(o.P99US)), ratio(g.CPUUSPerReq, o.CPUUSPerReq)))
			}
			if len(parts) > 0 {
				fmt.Fprintf(&b, "%s loop: %s.\n\n", mode, strings.Join(parts, "; "))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Target is one of the targets and how the run did.
type Target struct {
	Figure, Want, Measured string
	// Met is nil when the run has no figure for it.
	Met *bool
}

// Targets checks rows against the targets set for graft on this machine.
func Targets(rows []Row) []Target {
	var out []Target
	add := func(figure, want string, have bool, measured string, met bool) {
		t := Target{Figure: figure, Want: want, Measured: "not measured"}
		if have {
			t.Measured, t.Met = measured, &met
		}
		out = append(out, t)
	}
	gs, okS := find(rows, Graft, "closed", "small")
	add("graft closed-loop throughput, small", ">= 30,000 req/s", okS, fmt.Sprintf("%.0f req/s", gs.RPS), gs.RPS >= 30000)
	fs, okF := find(rows, Floor, "closed", "small")
	add("graft / floor throughput, small", ">= 0.65", okS && okF, ratio(gs.RPS, fs.RPS), okF && gs.RPS >= 0.65*fs.RPS)
	cs, okC := find(rows, Conventional, "closed", "small")
	add("graft / conventional throughput, small", ">= 5", okS && okC, ratio(gs.RPS, cs.RPS), okC && gs.RPS >= 5*cs.RPS)
	var open Row
	okO := false
	for _, r := range rows {
		if r.Peer == Graft && r.Corpus == "small" && r.Mode == "open" && (!okO || r.Rate == 10000) {
			open, okO = r, true
		}
	}
	add(fmt.Sprintf("graft p99 at %.0f req/s open loop, small", max(open.Rate, 10000)), "<= 2 ms", okO,
		fmt.Sprintf("%s at %.0f req/s", us(open.P99US), open.Rate), open.Rate >= 10000 && open.P99US <= 2000 && open.Errors == 0)
	var rss float64
	okR := false
	for _, r := range rows {
		if r.Peer == Graft {
			rss, okR = max(rss, r.RSSMiB), true
		}
	}
	add("graft peak RSS under load", "<= 64 MiB", okR, fmt.Sprintf("%.1f MiB", rss), rss <= 64)
	gl, okL := find(rows, Graft, "closed", "large")
	add("graft closed-loop throughput, large", ">= 8,000 req/s", okL, fmt.Sprintf("%.0f req/s", gl.RPS), gl.RPS >= 8000)
	gh, okH := find(rows, Graft, "closed", "huge")
	add("graft, huge corpus", "answered, within the default budget", okH,
		fmt.Sprintf("%d answered, %d errors, p99 %s", gh.Requests, gh.Errors, us(gh.P99US)), gh.Requests > 0 && gh.Errors == 0)
	return out
}

func writeTargets(b *strings.Builder, rows []Row) {
	b.WriteString("## Targets (small corpus unless named; server on one pinned core)\n\n")
	b.WriteString("| figure | target | measured | met |\n|---|---|---|---|\n")
	for _, t := range Targets(rows) {
		met := "—"
		if t.Met != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[*t.Met]
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", t.Figure, t.Want, t.Measured, met)
	}
	b.WriteString("\n")
}

// find returns the first row for peer and mode, on corpus if given.
func find(rows []Row, peer, mode string, corpus ...string) (Row, bool) {
	for _, r := range rows {
		if r.Peer == peer && r.Mode == mode && (len(corpus) == 0 || r.Corpus == corpus[0]) {
			return r, true
		}
	}
	return Row{}, false
}

func orderOf(rows []Row, key func(Row) string) []string {
	var out []string
	for _, r := range rows {
		if k := key(r); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// us formats a latency in microseconds.
func us(v int64) string {
	switch {
	case v >= 1_000_000:
		return fmt.Sprintf("%.2f s", float64(v)/1e6)
	case v >= 1000:
		return fmt.Sprintf("%.2f ms", float64(v)/1e3)
	}
	return fmt.Sprintf("%d µs", v)
}

func bytesString(n float64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", n/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f B", n)
}
