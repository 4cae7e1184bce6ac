package hostile

import (
	"fmt"
	"slices"
	"strings"
)

// Markdown is the run's report, for bench/results/hostile-latest.md.
func (r *Result) Markdown() string {
	var b strings.Builder
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "## graft under hostile clients (%s): %s\n\n", r.Date, verdict)
	fmt.Fprintf(&b, "Set-up: `make bench-hostile` on %s. graft runs as deploy/base ships it: `%s`, "+
		"GOMEMLIMIT=%d (the memory limit, %s), GOMAXPROCS=%d (the CPU limit), its config.yaml and templates; "+
		"TLS over loopback. For %s: %d connections from 127.0.0.2 send a request head declaring %d bytes and one byte of "+
		"body, then nothing (each opened again 100 ms after graft answers or closes it); %d connections from %d addresses "+
		"(127.0.0.10 and up) complete a TLS handshake and send nothing (each opened again 1 s after graft closes or refuses it); "+
		"a client configured as kube-apiserver's (127.0.0.1, HTTP/1.1, 25 idle connections, no session resumption) posts a "+
		"%d-byte review (%s) back to back and a %d-byte one (%s) every %s, each with `?timeout=%s`; "+
		"and a kubelet-like prober gets /healthz and /readyz every %s each on a new connection, with the probes' %s timeout. "+
		"The machine is shared: load average %s at the start, %s at the end.\n\n",
		r.Machine, strings.Join(r.Args, " "), r.Shipped.MemoryLimit, mibs(r.Shipped.MemoryLimit), r.Shipped.CPULimit,
		r.Duration, r.HeaderOnly.Connections, r.HeaderOnly.Declared, r.Idle.Connections, len(r.Idle.Addresses),
		r.Big.Bytes, r.Big.Name, r.Small.Bytes, r.Small.Name, r.SmallEvery, r.Shipped.WebhookTimeout, r.ProbeEvery, r.Shipped.ProbeTimeout, r.LoadAvg[0], r.LoadAvg[1])

	b.WriteString("| figure | value | target |\n|---|--:|--:|\n")
	fmt.Fprintf(&b, "| peak RSS (VmHWM, graft's life) | %s | ≤ %s |\n", mibs(r.PeakRSS), mibs(r.RSSTarget))
	fmt.Fprintf(&b, "| most RSS sampled during the attack | %s | |\n", mibs(r.SampledMax))
	fmt.Fprintf(&b, "| RSS at rest before it | %s | |\n", mibs(r.IdleRSS))
	fmt.Fprintf(&b, "| graft CPU during the attack | %.1f s | |\n", r.CPUSeconds)
	for _, p := range r.Probes {
		fmt.Fprintf(&b, "| %s probes answered | %d / %d (slowest %.1f ms) | all |\n", p.Path, p.Answered, p.Sent, p.MaxMS)
	}
	for _, c := range []*Calls{r.Big, r.Small} {
		fmt.Fprintf(&b, "| %s: answered in time | %d / %d (p50 %.1f ms, p99 %.1f ms, max %.1f ms) | all, ≤ %s + 50 ms |\n",
			c.Name, c.Answered-c.Late, c.Sent, c.P50MS, c.P99MS, c.MaxMS, r.Shipped.WebhookTimeout)
	}
	b.WriteString("\n| attack | connections | most open at once | handshakes | refused | closed by graft | graft's answers |\n|---|--:|--:|--:|--:|--:|---|\n")
	for _, a := range []struct {
		name string
		r    AttackResult
	}{{"header-only", r.HeaderOnly}, {"idle", r.Idle}} {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %s |\n", a.name, a.r.Connections, a.r.Peak, a.r.Established, a.r.Refused, a.r.Closed, answers(a.r.Answers))
	}
	b.WriteString("\nReviews: ")
	for i, c := range []*Calls{r.Big, r.Small} {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %d sent, %d answered (%d with a patch, %d with a warning), %d late, %d failed", c.Name, c.Sent, c.Answered, c.Patched, c.Warned, c.Late, c.Failed)
		if c.Warning != "" {
			fmt.Fprintf(&b, " (warning: %q)", c.Warning)
		}
		if c.FirstFailure != "" {
			fmt.Fprintf(&b, " (first failure: %s)", c.FirstFailure)
		}
	}
	b.WriteString(".\n\ngraft's own counters at the end: ")
	keys := make([]string, 0, len(r.Metrics))
	for k := range r.Metrics {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "`%s` %.0f", k, r.Metrics[k])
	}
	b.WriteString(".\n")
	if len(r.Failures) > 0 {
		b.WriteString("\nMissed:\n\n")
		for _, f := range r.Failures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return b.String()
}

// Lines are the report's headline figures, one a line, for the terminal.
func (r *Result) Lines() []string {
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	lines := []string{fmt.Sprintf("bench-hostile %s: peak RSS %s (target ≤ %s), at rest %s, %s attack, load average %s → %s",
		verdict, mibs(r.PeakRSS), mibs(r.RSSTarget), mibs(r.IdleRSS), r.Duration, r.LoadAvg[0], r.LoadAvg[1])}
	for _, p := range r.Probes {
		lines = append(lines, fmt.Sprintf("probes %s: %d/%d answered, slowest %.1f ms", p.Path, p.Answered, p.Sent, p.MaxMS))
	}
	for _, c := range []*Calls{r.Big, r.Small} {
		lines = append(lines, fmt.Sprintf("reviews %s (%d B): %d sent, %d answered, %d late, %d failed; p50 %.1f ms, p99 %.1f ms, max %.1f ms",
			c.Name, c.Bytes, c.Sent, c.Answered, c.Late, c.Failed, c.P50MS, c.P99MS, c.MaxMS))
	}
	lines = append(lines,
		fmt.Sprintf("header-only: %d connections, most open %d, %d handshakes, answers %s", r.HeaderOnly.Connections, r.HeaderOnly.Peak, r.HeaderOnly.Established, answers(r.HeaderOnly.Answers)),
		fmt.Sprintf("idle: %d connections from %d addresses, most open %d, %d handshakes, %d refused, %d closed by graft",
			r.Idle.Connections, len(r.Idle.Addresses), r.Idle.Peak, r.Idle.Established, r.Idle.Refused, r.Idle.Closed))
	for _, f := range r.Failures {
		lines = append(lines, "missed: "+f)
	}
	return lines
}

func answers(m map[string]int) string {
	if len(m) == 0 {
		return "—"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s × %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func mibs(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
