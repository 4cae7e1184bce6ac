package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// results is what -out writes: every fleet size's runs.
type results struct {
	When string `json:"when"`
	// Kubernetes is the version kube-apiserver reported on /version.
	Kubernetes string       `json:"kubernetes_version"`
	Setup      string       `json:"setup"`
	Sizes      []sizeResult `json:"sizes"`
}

// sizeResult is the runs at one fleet size, with the machine's load
// averages (1, 5 and 15 minutes) as they began and ended: the machine is
// shared, and wall times follow its load.
type sizeResult struct {
	Pods         int         `json:"pods"`
	Runs         []runResult `json:"runs"`
	MedianWallS  float64     `json:"median_wall_s"`
	MedianCPUS   float64     `json:"median_cpu_s"`
	MedianRSSMiB float64     `json:"median_peak_rss_mib"`
	MaxRSSMiB    float64     `json:"max_peak_rss_mib"`
	LoadBefore   string      `json:"load_before"`
	LoadAfter    string      `json:"load_after"`
	Lines        []string    `json:"-"` // as printed
}

type runResult struct {
	WallS      float64 `json:"wall_s"`
	CPUS       float64 `json:"cpu_s"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
}

// write writes dir/name.json and dir/name.md.
func (r *results) write(dir, name string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "## graft audit at fleet size (%s)\n\nSet-up: %s.\n\n", r.When, r.Setup)
	for _, s := range r.Sizes {
		fmt.Fprintf(&md, "### %d Pods (load average %s before, %s after)\n\n```\n%s\n```\n\n", s.Pods, s.LoadBefore, s.LoadAfter, strings.Join(s.Lines, "\n"))
	}
	if line := r.perPod(); line != "" {
		fmt.Fprintf(&md, "### Per Pod\n\n%s\n", line)
	}
	return os.WriteFile(filepath.Join(dir, name+".md"), []byte(md.String()), 0o644)
}

// perPod compares the smallest and the largest fleet's median wall and
// CPU time per Pod: a ratio near 1 is time linear in the fleet's size.
// It is empty with fewer than two sizes.
func (r *results) perPod() string {
	if len(r.Sizes) < 2 {
		return ""
	}
	lo, hi := r.Sizes[0], r.Sizes[len(r.Sizes)-1]
	per := func(s float64, pods int) float64 { return s * 1e6 / float64(pods) }
	wl, wh := per(lo.MedianWallS, lo.Pods), per(hi.MedianWallS, hi.Pods)
	cl, ch := per(lo.MedianCPUS, lo.Pods), per(hi.MedianCPUS, hi.Pods)
	return fmt.Sprintf("per Pod, %d vs %d Pods: median wall %.1f µs vs %.1f µs (ratio %.2f), median CPU %.1f µs vs %.1f µs (ratio %.2f)",
		hi.Pods, lo.Pods, wh, wl, wh/wl, ch, cl, ch/cl)
}

// loadAverage is /proc/loadavg's three load averages, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}
