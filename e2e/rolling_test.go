package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/e2e/internal/histo"
	"github.com/graftdev/graft/internal/names"
)

// The rolling test's load and how much of it each window needs. No pace
// is asked of the machine: the load keeps the controllers a step ahead
// (see startLoad), and a window lasts until it holds enough calls to judge
// the split between two replicas, however long that takes here.
const (
	rollingDeployments = 20 // scaled up in turn, rollingStep replicas at a time
	rollingStep        = 15
	// rollingWarmup calls are served before the first window.
	rollingWarmup = 200
	// rollingWindowCalls is the calls a window counts. Each replica's
	// share of them must be within [minShare, maxShare]: with per-request
	// balancing the split is binomial over the calls (30% is more than
	// ten standard deviations from half of 600); with per-connection
	// balancing it is binomial over the reconnections rotation makes
	// (see rollingRotation: 120 or more a window, 30% is over four
	// standard deviations from half).
	rollingWindowCalls = 600
	// rollingWindowLimit only bounds a hang: a window that cannot gather
	// its calls in this long means the load has stopped.
	rollingWindowLimit = 5 * time.Minute
	// Each running replica's share of graft's calls in a window.
	minShare, maxShare = 0.30, 0.70
)

// rollingRotation is added to the shipped config.yaml when the API server
// picks an endpoint per connection (before 1.37, or with
// WebhookRoundTripLoadBalancing off): rotation after 5 requests or 2 s,
// so that a window of rollingWindowCalls sees over a hundred
// reconnections, each to a random ready replica. With the shipped
// defaults (1000 requests, 10 s) the few connections this load keeps busy
// rotate about once a window, and the split between two replicas is a
// coin tossed a few times (one run measured 55/45, 78/22 and 61/39). With
// per-request balancing (1.37) graft runs as shipped: every call picks a
// replica.
const rollingRotation = `
server:
  maxConnRequests: 5
  maxConnAge: 2s
`

// TestRollingReplicas replaces each of two graft replicas in turn while
// the controllers create Pods as fast as this machine lets them
// (Deployments scaled up as a user or an autoscaler does), the way the
// shipped Deployment rolls (a new replica first, then SIGTERM to an old
// one), against a kube-apiserver that reaches graft through the shipped
// webhook's service: reference as it is: --enable-aggregator-routing, a
// real Service and an EndpointSlice kept as the endpoints controller
// would, each replica in its own network namespace with the certificate
// for graft.graft-system.svc. No create may fail, fail open or go
// uninjected, and while two replicas run, each serves 30-70% of the calls
// of a window of rollingWindowCalls. Then one replica is killed with
// SIGKILL, and what that costs is reported, not judged. How fast the
// creates went is reported too: it is this machine's, not graft's.
func TestRollingReplicas(t *testing.T) {
	needsWorkloads(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	started := time.Now()
	r := newRollingRig(t)
	t.Logf("control plane, network, Service and two replicas ready in %s; the API server balances %s",
		time.Since(started).Round(time.Millisecond), r.balancing)
	load := r.startLoad(t, rollingDeployments, rollingStep)
	defer load.stop()
	failOpen0 := r.failOpen(t)
	refused0 := r.refused(t)

	a, b := r.Replicas[0], r.Replicas[1]
	r.waitCalls(t, rollingWarmup, a, b)
	var windows []shareWindow
	windows = append(windows, r.measure(t, a, b))
	c := r.replace(t, a, "graft-c")
	windows = append(windows, r.measure(t, b, c))
	d := r.replace(t, b, "graft-d")
	windows = append(windows, r.measure(t, c, d))
	rolling := load.until(time.Now())
	rolling.failed = r.refused(t) - refused0

	t.Logf("rolling: %d creates in %s (%.0f/s on this machine), %g failed, %d not injected",
		rolling.creates, rolling.span.Round(time.Millisecond), float64(rolling.creates)/rolling.span.Seconds(), rolling.failed, rolling.uninjected)
	if rolling.failed > 0 {
		t.Errorf("%g creates failed while replicas were replaced; the controllers' events:\n%s", rolling.failed, summarize(failedCreatesIn(t, r.client, r.ns)))
	}
	if rolling.uninjected > 0 {
		t.Errorf("%d Pods admitted without injection", rolling.uninjected)
	}
	if delta := r.failOpen(t) - failOpen0; delta != 0 {
		t.Errorf("apiserver_admission_webhook_fail_open_count rose by %g", delta)
	}
	for _, w := range windows {
		t.Logf("window of %s: %s", w.span.Round(time.Millisecond), w)
		for i, s := range w.shares() {
			if s < minShare || s > maxShare {
				t.Errorf("window %s: %s served %.0f%% of the calls, want %.0f-%.0f%%", w, w.names[i], 100*s, 100*minShare, 100*maxShare)
			}
		}
	}

	r.killReport(t, load, c, d)
}

// rollingRig is the dedicated control plane and graft served behind it.
type rollingRig struct {
	cp     *cluster.Cluster
	client kubernetes.Interface
	*cluster.Served
	ns      string
	webhook string // the mutating webhook's name in the API server's metrics
	// balancing says how the API server spreads calls over endpoints.
	balancing balancing
}

// balancing is how an API server picks a webhook's endpoint.
type balancing string

const (
	// perRequest: each call resolves an endpoint (1.37's
	// WebhookRoundTripLoadBalancing), and connections are pooled per
	// endpoint.
	perRequest balancing = "per request"
	// perConnection: an endpoint is picked when a connection opens, and
	// the pool keeps it until graft closes it.
	perConnection balancing = "per connection"
)

// roundTripBalancing is the feature gate of per-request balancing, beta
// and on by default in 1.37.
const roundTripBalancing = "WebhookRoundTripLoadBalancing"

func newRollingRig(t *testing.T) *rollingRig {
	t.Helper()
	ctx := t.Context()
	opts, err := cluster.OptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(cluster.TempRoot(), "graft-e2e-rolling-")
	if err != nil {
		t.Fatal(err)
	}
	opts.Dir = dir
	// The load is the controllers' Pod creates: kube-controller-manager's
	// clients may send what they need for it (kubeadm leaves them at 20
	// requests/s, which would cap the creates below the pace), and no
	// nodes run, so that scheduling and kwok's status writes do not
	// compete with the creates on a 2-core machine: admission is what this
	// test loads.
	opts.Nodes = 0
	opts.ControllerManagerArgs = []string{"--kube-api-qps=1000", "--kube-api-burst=2000"}
	r := &rollingRig{}
	t.Cleanup(func() { r.close(t, dir) })

	// This API server dials the endpoints itself; the suite's goes
	// through the rewritten url: references and needs none of this.
	if r.cp, err = cluster.StartControlPlane(ctx, opts, "--enable-aggregator-routing=true"); err != nil {
		t.Fatal(err)
	}
	r.client = r.cp.Client
	config, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "base", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// As shipped where each call picks a replica; with faster rotation
	// where only a new connection does.
	r.balancing = perConnection
	if r.featureEnabled(t, roundTripBalancing) {
		r.balancing = perRequest
	} else {
		config = append(config, rollingRotation...)
	}
	configPath := filepath.Join(dir, "graft-config.yaml")
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		t.Fatal(err)
	}
	r.Served, err = r.cp.ServeGraft(ctx, env.shipped, []string{"graft-a", "graft-b"},
		"--config="+configPath, "--templates-dir="+filepath.Join(repoRoot, "deploy", "base", "templates"))
	if err != nil {
		t.Fatal(err)
	}
	r.webhook = r.Webhook
	r.ns = "e2e-rolling"
	if err := r.cp.CreateNamespace(ctx, r.ns, map[string]string{names.Inject: "enabled"}); err != nil {
		t.Fatal(err)
	}
	if err := r.cp.WaitInjecting(ctx, r.ns); err != nil {
		t.Fatalf("the service: webhook never took effect: %v", err)
	}
	return r
}

// startReplica starts a replica and adds it to the endpoints once ready.
func (r *rollingRig) startReplica(t *testing.T, name string) *cluster.Replica {
	t.Helper()
	rep, err := r.StartReplica(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// replace rolls old out as the Deployment does (maxSurge 1,
// maxUnavailable 0): a new replica, ready, joins the endpoints; then old
// is marked terminating and gets SIGTERM, and leaves the endpoints when it
// has exited, which it must do cleanly.
func (r *rollingRig) replace(t *testing.T, old *cluster.Replica, name string) *cluster.Replica {
	t.Helper()
	next := r.startReplica(t, name)
	if err := r.Endpoints.Set(t.Context(), old, cluster.EndpointTerminating); err != nil {
		t.Fatal(err)
	}
	if err := old.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := old.Wait(ctx); err != nil {
		t.Errorf("%s after SIGTERM: %v\n%s", old.Name, err, old.Log(8<<10))
	}
	if err := r.Endpoints.Remove(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	return next
}

// shareWindow is how many calls each of two replicas served in a span.
type shareWindow struct {
	names  [2]string
	counts [2]float64
	total  float64
	span   time.Duration
}

func (w shareWindow) shares() [2]float64 {
	return [2]float64{w.counts[0] / w.total, w.counts[1] / w.total}
}

func (w shareWindow) String() string {
	s := w.shares()
	return fmt.Sprintf("%s %.0f%% (%g), %s %.0f%% (%g)", w.names[0], 100*s[0], w.counts[0], w.names[1], 100*s[1], w.counts[1])
}

// measure counts the calls x and y serve until they have served
// rollingWindowCalls between them.
func (r *rollingRig) measure(t *testing.T, x, y *cluster.Replica) shareWindow {
	t.Helper()
	x0, y0 := replicaRequests(t, x), replicaRequests(t, y)
	start := time.Now()
	r.waitCalls(t, rollingWindowCalls, x, y)
	w := shareWindow{names: [2]string{x.Name, y.Name}, span: time.Since(start)}
	w.counts = [2]float64{replicaRequests(t, x) - x0, replicaRequests(t, y) - y0}
	w.total = w.counts[0] + w.counts[1]
	return w
}

// waitCalls waits until x and y have served n more calls between them.
func (r *rollingRig) waitCalls(t *testing.T, n float64, x, y *cluster.Replica) {
	t.Helper()
	served := func() float64 { return replicaRequests(t, x) + replicaRequests(t, y) }
	from := served()
	deadline := time.Now().Add(rollingWindowLimit)
	for got := 0.0; got < n; got = served() - from {
		if time.Now().After(deadline) {
			t.Fatalf("%s and %s served %g calls in %s, want %g: the load has stopped", x.Name, y.Name, got, rollingWindowLimit, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// featureEnabled reads the API server's kubernetes_feature_enabled gauge
// for gate (published since 1.26); a gate it does not list is off.
func (r *rollingRig) featureEnabled(t *testing.T, gate string) bool {
	t.Helper()
	return r.apiserverMetric(t, "kubernetes_feature_enabled", func(m *dto.Metric) bool { return histo.Label(m, "name") == gate }) == 1
}

// replicaRequests is the reviews rep has answered so far.
func replicaRequests(t *testing.T, rep *cluster.Replica) float64 {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	return sumFamily(scrape(t, c, rep.AdminURL+"/metrics", ""), graftRequestsMetric, nil)
}

// apiserverMetric sums the API server's series name whose labels match.
func (r *rollingRig) apiserverMetric(t *testing.T, name string, match func(*dto.Metric) bool) float64 {
	t.Helper()
	c, token := r.cp.APIServerHTTP()
	defer c.CloseIdleConnections()
	return sumFamily(scrape(t, c, r.cp.APIServerURL()+"/metrics", token), name, match)
}

func (r *rollingRig) failOpen(t *testing.T) float64 {
	t.Helper()
	return r.apiserverMetric(t, "apiserver_admission_webhook_fail_open_count", r.ours)
}

// refused is how many Pod creates the API server has refused for graft's
// sake: calls to graft's webhook it turned into a refusal (an error under
// failurePolicy Fail, or a denial), and Pods the shipped policy denied
// (admitted without graft under Ignore). The controllers retry what is
// refused, so this is the count of failed creates.
func (r *rollingRig) refused(t *testing.T) float64 {
	t.Helper()
	c, token := r.cp.APIServerHTTP()
	defer c.CloseIdleConnections()
	mfs := scrape(t, c, r.cp.APIServerURL()+"/metrics", token)
	return sumFamily(mfs, "apiserver_admission_webhook_rejection_count", r.ours) +
		sumFamily(mfs, "apiserver_validating_admission_policy_check_total", func(m *dto.Metric) bool {
			return histo.Label(m, "policy") == env.shipped.Policy.Name && histo.Label(m, "enforcement_action") == "deny"
		})
}

func (r *rollingRig) ours(m *dto.Metric) bool { return histo.Label(m, "name") == r.webhook }

func sumFamily(mfs map[string]*dto.MetricFamily, name string, match func(*dto.Metric) bool) float64 {
	var sum float64
	for _, m := range mfs[name].GetMetric() {
		if match != nil && !match(m) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// killReport kills victim with SIGKILL under load, leaves its endpoint
// ready for a second (until a kubelet would notice), then marks it not
// ready and rolls in a replacement. It logs what failed and how the API
// server handled it: this is what a crash costs, not a requirement.
func (r *rollingRig) killReport(t *testing.T, load *workloadLoad, victim, survivor *cluster.Replica) {
	t.Helper()
	failOpen0 := r.failOpen(t)
	refused0 := r.refused(t)
	calls0 := r.webhookCalls(t)
	survivor0 := replicaRequests(t, survivor)
	from := time.Now()
	if err := victim.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := r.Endpoints.Set(t.Context(), victim, cluster.EndpointNotReady); err != nil {
		t.Fatal(err)
	}
	next := r.startReplica(t, "graft-e")
	if err := r.Endpoints.Remove(t.Context(), victim); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	load.stop()
	after := load.since(from)
	after.failed = r.refused(t) - refused0
	calls := r.webhookCalls(t)
	for code := range calls {
		calls[code] -= calls0[code]
	}
	answered := replicaRequests(t, survivor) - survivor0 + replicaRequests(t, next)
	t.Logf("SIGKILL report: %s killed under load; in the %s after: %d creates, %g failed (the controllers retried them), %d not injected; fail-open count +%g",
		victim.Name, after.span.Round(time.Millisecond), after.creates, after.failed, after.uninjected, r.failOpen(t)-failOpen0)
	t.Logf("SIGKILL report: the API server's calls to %s by HTTP code %v; %s and %s answered %g",
		r.webhook, calls, survivor.Name, next.Name, answered)
	if after.failed > 0 {
		t.Logf("SIGKILL report: the controllers' events of the failed creates:\n%s", summarize(failedCreatesIn(t, r.client, r.ns)))
	}
	if lines := failingOpen(r.cp.Logs(1 << 20)); len(lines) > 0 {
		t.Logf("SIGKILL report: the API server's log of the calls it failed open on (each logged once per call):\n%s", summarize(lines))
	}
}

// webhookCalls is apiserver_admission_webhook_request_total for graft's
// webhook by its code label.
func (r *rollingRig) webhookCalls(t *testing.T) map[string]float64 {
	t.Helper()
	c, token := r.cp.APIServerHTTP()
	defer c.CloseIdleConnections()
	out := map[string]float64{}
	for _, m := range scrape(t, c, r.cp.APIServerURL()+"/metrics", token)["apiserver_admission_webhook_request_total"].GetMetric() {
		if r.ours(m) {
			out[histo.Label(m, "code")] += m.GetCounter().GetValue()
		}
	}
	return out
}

// failingOpen picks from the API server's log the reasons of the webhook
// calls it failed open on.
func failingOpen(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if _, reason, ok := strings.Cut(line, "Failed calling webhook, failing open"); ok {
			if _, err, ok := strings.Cut(reason, "err=\""); ok {
				reason = err
			}
			out = append(out, strings.TrimSpace(reason))
		}
	}
	return out
}

// summarize groups failure messages, Pod names blanked, most common first.
func summarize(errs []string) string {
	counts := map[string]int{}
	for _, e := range errs {
		counts[podName.ReplaceAllString(e, "load-N")]++
	}
	msgs := make([]string, 0, len(counts))
	for m := range counts {
		msgs = append(msgs, m)
	}
	slices.SortFunc(msgs, func(a, b string) int { return counts[b] - counts[a] })
	var sb strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&sb, "  %d x %s\n", counts[m], m)
	}
	return sb.String()
}

// podName matches the names the load's ReplicaSets give their Pods.
var podName = regexp.MustCompile(`load-\d+-[a-z0-9]+(-[a-z0-9]{5})?`)

func (r *rollingRig) close(t *testing.T, dir string) {
	start := time.Now()
	defer func() { t.Logf("teardown took %s", time.Since(start).Round(time.Millisecond)) }()
	var errs []error
	var logs []string
	if r.cp != nil {
		logs = r.cp.LogFiles()
	}
	if r.Served != nil {
		for _, rep := range r.Replicas {
			logs = append(logs, rep.LogPath())
		}
		errs = append(errs, r.Served.Close())
	}
	if r.cp != nil {
		errs = append(errs, r.cp.Stop())
	}
	if err := errors.Join(errs...); err != nil {
		t.Errorf("teardown: %v", err)
	}
	if t.Failed() {
		os.RemoveAll(filepath.Join(dir, "etcd-data"))
		t.Logf("the processes' logs, kept: %s", strings.Join(logs, " "))
		return
	}
	os.RemoveAll(dir)
}

// workloadLoad scales Deployments up at a steady pace, as a user or an
// autoscaler does, and records every Pod the controllers create.
type workloadLoad struct {
	client  kubernetes.Interface
	ns      string
	started time.Time
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once
	watch   *cluster.PodWatch
	// wanted is the replicas asked for so far, over all Deployments.
	wanted atomic.Int64
}

// startLoad creates deployments Deployments of no replicas in r's
// namespace, then keeps the controllers a step ahead: whenever fewer than
// step Pods asked for are still to be created, it scales the next
// Deployment up by step. The creates go as fast as the controllers and
// the API server go on this machine; nothing asks them for a pace.
// Stopping ends the scaling and waits for the controllers to create what
// was asked.
func (r *rollingRig) startLoad(t *testing.T, deployments, step int) *workloadLoad {
	t.Helper()
	ctx := t.Context()
	apps := r.client.AppsV1().Deployments(r.ns)
	names := make([]string, deployments)
	for i := range names {
		d := newDeployment(fmt.Sprintf("load-%02d", i), 0)
		if _, err := apps.Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names[i] = d.Name
	}
	w, err := cluster.WatchPods(ctx, r.client, r.ns, isInjected)
	if err != nil {
		t.Fatal(err)
	}
	feed, stop := context.WithCancel(context.Background())
	l := &workloadLoad{client: r.client, ns: r.ns, started: time.Now(), cancel: stop, watch: w}
	l.wg.Go(func() {
		replicas := make([]int, deployments)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; {
			select {
			case <-feed.Done():
				return
			case <-tick.C:
			}
			if created, _ := l.watch.Counts(); l.wanted.Load()-int64(created) >= int64(step) {
				continue
			}
			k := i % deployments
			i++
			replicas[k] += step
			patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas[k])
			if _, err := apps.Patch(feed, names[k], types.MergePatchType, patch, metav1.PatchOptions{}, "scale"); err != nil {
				if feed.Err() == nil {
					t.Errorf("scale %s to %d: %v", names[k], replicas[k], err)
				}
				return
			}
			l.wanted.Add(int64(step))
		}
	})
	return l
}

// stop ends the scaling and waits (up to a minute) until the controllers
// have created every Pod asked for.
func (l *workloadLoad) stop() {
	l.once.Do(func() {
		l.cancel()
		l.wg.Wait()
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			if created, _ := l.watch.Counts(); int64(created) >= l.wanted.Load() {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		l.watch.Close()
	})
}

// loadSummary is what the creates in a span came to.
type loadSummary struct {
	span       time.Duration
	creates    int
	failed     float64 // refused creates, by the API server's count
	uninjected int
}

func (l *workloadLoad) summary(from, to time.Time) loadSummary {
	s := loadSummary{span: to.Sub(from)}
	for _, p := range l.watch.Seen() {
		if p.Created.Before(from) || p.Created.After(to) {
			continue
		}
		s.creates++
		if !p.Marked {
			s.uninjected++
		}
	}
	return s
}

// until summarizes the creates from the start to t.
func (l *workloadLoad) until(t time.Time) loadSummary { return l.summary(l.started, t) }

// since summarizes the creates from t to now.
func (l *workloadLoad) since(t time.Time) loadSummary { return l.summary(t, time.Now()) }
