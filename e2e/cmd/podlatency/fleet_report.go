package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/graftdev/graft/e2e/internal/histo"
)

// fleetReport is what `make bench-fleet` writes to
// bench/results/fleet-latest.{md,json}.
type fleetReport struct {
	When string `json:"when"`
	// Kubernetes is the version kube-apiserver reported on /version.
	Kubernetes string          `json:"kubernetes_version"`
	Setup      string          `json:"setup"`
	Rounds     [][]fleetResult `json:"rounds"`
	Canary     canaryResult    `json:"canary"`
	Targets    []Target        `json:"targets"`
}

func newFleetReport(o options, rounds [][]fleetResult, canary canaryResult) *fleetReport {
	version := ""
	if len(rounds) > 0 && len(rounds[0]) > 0 {
		version = rounds[0][0].Kubernetes
	}
	r := &fleetReport{
		When:       time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		Kubernetes: version,
		Setup: fmt.Sprintf("a cluster on loopback per variant and round: etcd 3.6, kube-apiserver %s with its default admission plugins "+
			"(and --enable-aggregator-routing, so graft is reached through its Service's EndpointSlice), kube-controller-manager and "+
			"kube-scheduler (client rate limits raised to 2000 requests/s, 10 concurrent Deployment and ReplicaSet syncs), "+
			"%d kwok nodes; %d Deployments of a one-container Pod (a port, requests, a readiness probe) scaled from 0 to %d replicas each at once (%d Pods) by `kubectl scale` "+
			"patches, 8 at a time. `graft` is two replicas of the real binary, each in its own network namespace, behind a "+
			"selector-less Service, with deploy/base's webhook registration (service: reference) and guarantee policy; `minimal` "+
			"and `replay` are podlatency's standard-library webhook answering a fixed patch (one init container; graft's own "+
			"patch for this Pod) on loopback, in a process of its own, reinvocationPolicy Never",
			version, o.nodes, o.deployments, o.replicas, o.deployments*o.replicas),
		Rounds: rounds,
		Canary: canary,
	}
	r.Targets = r.targets(o)
	return r
}

// fleetRow finds variant name in a round.
func fleetRow(round []fleetResult, name string) (fleetResult, bool) {
	for _, x := range round {
		if x.Variant == name {
			return x, true
		}
	}
	return fleetResult{}, false
}

// ratios is a's creates/s over b's in each round that has both.
func (r *fleetReport) ratios(a, b string) []float64 {
	var out []float64
	for _, round := range r.Rounds {
		x, okA := fleetRow(round, a)
		y, okB := fleetRow(round, b)
		if okA && okB && y.CreatedPerSec > 0 {
			out = append(out, x.CreatedPerSec/y.CreatedPerSec)
		}
	}
	return out
}

func (r *fleetReport) targets(o options) []Target {
	var out []Target
	if xs := r.ratios("replay", "graft"); len(xs) > 0 {
		m := median(xs)
		out = append(out, Target{"Pods/s sustained: replay's / graft's (median of rounds)", "<= 1.15",
			fmt.Sprintf("%.2f (rounds: %s)", m, join(xs, "%.2f")), m <= 1.15})
	}
	failed, uninjected, calls := 0, 0, -1.0
	for _, round := range r.Rounds {
		if g, ok := fleetRow(round, "graft"); ok {
			failed += g.FailedCreates
			uninjected += g.Uninjected
			if calls < 0 || g.CallsPerCreate > calls {
				calls = g.CallsPerCreate
			}
		}
	}
	if calls >= 0 {
		out = append(out,
			Target{"graft: failed creates (all rounds)", "0", fmt.Sprint(failed), failed == 0},
			Target{"graft: uninjected Pods (all rounds)", "0", fmt.Sprint(uninjected), uninjected == 0},
			Target{"graft calls per Pod create (highest round)", "1.00", fmt.Sprintf("%.2f", calls), fmt.Sprintf("%.2f", calls) == "1.00"})
	}
	c := r.Canary
	if c.ReplicaSets > 0 {
		in := c.SharePercent >= canaryPercent-canaryPoints && c.SharePercent <= canaryPercent+canaryPoints
		out = append(out,
			Target{fmt.Sprintf("canary: share of %d ReplicaSets on the canary revision", c.ReplicaSets),
				fmt.Sprintf("%d%% ± %d points", canaryPercent, canaryPoints), fmt.Sprintf("%.0f%% (%d mixed)", c.SharePercent, c.Mixed), in && c.Mixed == 0},
			Target{"canary: failed creates", "0", fmt.Sprint(c.FailedCreates), c.FailedCreates == 0})
	}
	return out
}

// canaryOutside is how often a correct split of n ReplicaSets falls
// outside the target's band.
func canaryOutside(n int) float64 {
	lo := int(math.Ceil(float64(n) * (canaryPercent - canaryPoints) / 100))
	hi := int(math.Floor(float64(n) * (canaryPercent + canaryPoints) / 100))
	return histo.BinomialTails(n, canaryPercent/100.0, lo, hi)
}

func (r *fleetReport) write(dir string, stdout io.Writer) error {
	return writeResults(dir, "fleet-latest", r, r.markdown(), stdout)
}

func (r *fleetReport) markdown() string {
	var md strings.Builder
	fmt.Fprintf(&md, "## Fleet: Pods the control plane sustains under the controllers (%s)\n\n", r.When)
	md.WriteString("Set-up: " + r.Setup + ". Created: from the first scale until the last Pod was seen (an informer); Ready: how many " +
		"kwok had made Ready by then (and, with -fleet-ready, when the last was). Failed creates: kube-apiserver's count of Pod creates it refused (apiserver_request_total), which the " +
		"controllers retry. Calls and time per call: kube-apiserver's apiserver_admission_webhook_admission_duration_seconds. " +
		"CPU: /proc of kube-apiserver and of graft's two replicas together, per Pod created. Load average: the machine's, 1 minute, at the first scale and at the last create.\n\n")
	for i, round := range r.Rounds {
		fmt.Fprintf(&md, "### Round %d of %d\n\n", i+1, len(r.Rounds))
		md.WriteString("| variant | Pods | created in | created/s | Ready by then | all Ready in | failed creates | uninjected | calls/create | API server per call | API server CPU/create | graft CPU/create | load average |\n")
		md.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		var events []string
		for _, x := range round {
			calls, call, graftCPU := "—", "—", "—"
			if x.CallsPerCreate > 0 {
				calls, call = fmt.Sprintf("%.2f", x.CallsPerCreate), fmt.Sprintf("%.2f ms", x.WebhookMS)
			}
			if x.GraftCPUMS > 0 {
				graftCPU = fmt.Sprintf("%.3f ms", x.GraftCPUMS)
			}
			allReady := "—"
			if x.ReadyS > 0 {
				allReady = fmt.Sprintf("%.1f s", x.ReadyS)
			}
			failed := fmt.Sprint(x.FailedCreates)
			if x.FailedCreates > 0 {
				failed += fmt.Sprintf(" (by code %v; fail-open %d, policy denials %d)", x.FailedByCode, x.FailOpen, x.PolicyDenied)
				events = append(events, fmt.Sprintf("- %s: %v", x.Variant, x.FailedEvents))
				if len(x.GraftFailures) > 0 {
					events = append(events, fmt.Sprintf("- %s: graft's failure-mode answers by reason %v", x.Variant, x.GraftFailures))
				}
			}
			fmt.Fprintf(&md, "| %s | %d | %.1f s | %.0f | %d | %s | %s | %d | %s | %s | %.2f ms | %s | %.1f → %.1f |\n",
				x.Variant, x.Pods, x.CreatedS, x.CreatedPerSec, x.Ready, allReady, failed, x.Uninjected, calls, call, x.APIServerCPUMS, graftCPU, x.Load[0], x.Load[1])
		}
		md.WriteString("\n")
		if len(events) > 0 {
			md.WriteString("The ReplicaSet controller's failed syncs (its log; a sync stops at its first refused create), by error and count:\n\n" + strings.Join(events, "\n") + "\n\n")
		}
	}
	for _, other := range []string{"none", "minimal", "replay"} {
		if xs := r.ratios(other, "graft"); len(xs) > 0 {
			fmt.Fprintf(&md, "- Pods created per second, %s's over graft's: %s (median %.2f)\n", other, join(xs, "%.2f"), median(xs))
		}
	}
	c := r.Canary
	fmt.Fprintf(&md, "\n### Canary on real rollouts\n\n%d Deployments of %d replicas in a namespace on deploy/examples/revisions' tag %s "+
		"(%d%% to revision %s), graft served with that example's configuration and webhooks: %d ReplicaSets, %d on %s (%.0f%%), "+
		"%d with Pods on both revisions; %d Pods, %d uninjected, %d failed creates; rolled out in %.1f s. The count on the canary is "+
		"binomial: a correct split of %d ReplicaSets falls outside ±%d points with probability %.3f.\n\n",
		c.Deployments, canaryReplicas, canaryTag, canaryPercent, canaryRevision, c.ReplicaSets, c.OnCanary, canaryRevision, c.SharePercent,
		c.Mixed, c.Pods, c.Uninjected, c.FailedCreates, c.RolledOutS, c.ReplicaSets, canaryPoints, canaryOutside(c.ReplicaSets))
	targetsTable(&md, r.Targets)
	return md.String()
}
