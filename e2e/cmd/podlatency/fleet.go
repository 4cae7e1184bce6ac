package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/e2e/internal/histo"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/proc"
)

// The fleet phase (-fleet): what the control plane sustains when the
// controllers create a fleet's Pods through each variant, on simulated
// nodes. Each variant runs on a cluster of its own, started afresh, so
// none inherits another's Pods.

// fleetVariants are the variants the fleet phase compares, "none" first.
var fleetVariants = []string{"none", "graft", "minimal", "replay"}

// fleetCluster starts the fleet's cluster: -nodes simulated nodes, the
// API server dialling graft's endpoints itself (as TestRollingReplicas
// does, graft is reached through its Service), and the controllers' and
// the scheduler's clients allowed the rate a fleet needs: kubeadm leaves
// them at 20 and 50 requests/s, which would measure the clients' limits,
// not the control plane.
func fleetCluster(ctx context.Context, o options, name string, stderr io.Writer) (*cluster.Cluster, cluster.Options, func(*error), error) {
	return cluster.StartToolControlPlane(ctx, "fleet-"+name, stderr, func(co *cluster.Options) {
		co.Nodes = o.nodes
		co.ControllerManagerArgs = []string{"--kube-api-qps=2000", "--kube-api-burst=4000",
			"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10"}
		co.SchedulerArgs = []string{"--kube-api-qps=2000", "--kube-api-burst=4000"}
	}, "--enable-aggregator-routing=true")
}

// fleetBench starts a fleet cluster for name and a bench over it. The
// caller defers done with its named error.
func fleetBench(ctx context.Context, o options, name string, stderr io.Writer) (b *bench, done func(*error), err error) {
	c, opts, finish, err := fleetCluster(ctx, o, name, stderr)
	if err != nil {
		return nil, nil, err
	}
	if b, err = newBench(c, opts.Dir, ""); err != nil {
		finish(&err)
		return nil, nil, err
	}
	return b, func(errp *error) {
		b.close()
		finish(errp)
	}, nil
}

// fleetResult is one variant's run: the controllers scaling -deployments
// Deployments from 0 to -replicas each.
type fleetResult struct {
	Variant string `json:"variant"`
	// Kubernetes is the version the round's kube-apiserver reported.
	Kubernetes string `json:"kubernetes_version"`
	Pods       int    `json:"pods"`
	// CreatedS is from the first scale to the last Pod seen. Ready is how
	// many were Ready by then (all of them with -fleet-ready, and ReadyS
	// then from the first scale to the last Pod seen Ready).
	CreatedS      float64 `json:"created_s"`
	CreatedPerSec float64 `json:"created_per_s"`
	Ready         int     `json:"ready"`
	ReadyS        float64 `json:"ready_s,omitempty"`
	ReadyPerSec   float64 `json:"ready_per_s,omitempty"`
	// FailedCreates is the API server's count of Pod creates it refused
	// (apiserver_request_total, POST pods, any code but 201): the
	// controllers retry them, so they cost time, not Pods.
	FailedCreates int `json:"failed_creates"`
	// FailedByCode splits them by HTTP code; FailOpen and PolicyDenied
	// are the API server's counts of calls to the variant's webhook it
	// failed open on (failurePolicy Ignore) and of Pods graft's guarantee
	// policy then denied.
	FailedByCode map[string]int `json:"failed_by_code,omitempty"`
	FailOpen     int            `json:"webhook_fail_open,omitempty"`
	PolicyDenied int            `json:"policy_denied,omitempty"`
	// FailedEvents are the ReplicaSet controller's failed syncs by error
	// (the API server's refusals as the controller got them; one per
	// sync, which stops at its first refused create), from its log.
	FailedEvents map[string]int `json:"controller_errors,omitempty"`
	// GraftFailures are graft's replicas' answers by their failure mode
	// (graft_admission_failures_total by reason): past the budget, shed,
	// and so on, each admitted unchanged and then refused by the policy.
	GraftFailures map[string]int `json:"graft_failure_answers,omitempty"`
	Uninjected    int            `json:"uninjected"`
	// CallsPerCreate and WebhookMS are the API server's figures for the
	// variant's webhook.
	CallsPerCreate float64 `json:"calls_per_create,omitempty"`
	WebhookMS      float64 `json:"apiserver_call_ms,omitempty"`
	// CPU per Pod created, in milliseconds: kube-apiserver's, and graft's
	// replicas' together.
	APIServerCPUMS float64 `json:"apiserver_cpu_ms_per_create"`
	GraftCPUMS     float64 `json:"graft_cpu_ms_per_create,omitempty"`
	// Load is the machine's 1-minute load average at the first scale and
	// at the last create (/proc/loadavg): the machine is shared, and
	// rates follow its load.
	Load [2]float64 `json:"load_average"`
}

// runFleet runs every fleet variant -fleet-rounds times, the order
// rotating from round to round, then the canary on real rollouts, and
// writes fleet-latest.{md,json}.
func runFleet(ctx context.Context, o options, stdout, stderr io.Writer) error {
	pod := fleetPod()
	var (
		rounds [][]fleetResult
		err    error
	)
	for round := range o.fleetRounds {
		res := make([]fleetResult, len(fleetVariants))
		for k := range fleetVariants {
			i := (round + k) % len(fleetVariants)
			fmt.Fprintf(stderr, "fleet: round %d of %d, %s: %d Deployments scaled from 0 to %d on %d nodes\n",
				round+1, o.fleetRounds, fleetVariants[i], o.deployments, o.replicas, o.nodes)
			if res[i], err = fleetOnce(ctx, o, fleetVariants[i], pod, stderr); err != nil {
				return fmt.Errorf("fleet %s: %w", fleetVariants[i], err)
			}
			r := res[i]
			fmt.Fprintf(stderr, "fleet: %s: %d Pods created in %.1f s (%.0f/s), %d Ready by then, %d failed creates, %d uninjected\n",
				r.Variant, r.Pods, r.CreatedS, r.CreatedPerSec, r.Ready, r.FailedCreates, r.Uninjected)
		}
		rounds = append(rounds, res)
	}
	fmt.Fprintf(stderr, "fleet: canary: %d Deployments rolled out on a tag sending 10%% to the canary revision\n", o.canaryDeployments)
	canary, err := fleetCanary(ctx, o, stderr)
	if err != nil {
		return fmt.Errorf("fleet canary: %w", err)
	}
	rep := newFleetReport(o, rounds, canary)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	return rep.write(o.out, stdout)
}

// fleetOnce runs variant name on a cluster of its own.
func fleetOnce(ctx context.Context, o options, name string, pod *corev1.Pod, stderr io.Writer) (res fleetResult, err error) {
	b, done, err := fleetBench(ctx, o, name, stderr)
	if err != nil {
		return res, err
	}
	defer done(&err)
	c := b.c
	if res.Kubernetes, err = c.ServerVersion(); err != nil {
		return res, err
	}
	b.replayFor = pod
	var (
		v     variant
		graft []*cluster.Replica
	)
	switch name {
	case "none":
		v, err = setupNone(ctx, b)
	case "minimal":
		v, err = setupMinimal(ctx, b)
	case "replay":
		v, err = setupReplay(ctx, b)
	case "graft":
		var served *cluster.Served
		v, served, err = setupServed(ctx, b, filepath.Join("..", "deploy", "base"), map[string]string{names.Inject: "enabled"})
		if served != nil {
			b.onClose(func() { _ = served.Close() })
			graft = served.Replicas
		}
	default:
		err = fmt.Errorf("no fleet variant %q", name)
	}
	if err != nil {
		return res, err
	}
	client, err := quietClient(c)
	if err != nil {
		return res, err
	}
	if err := waitInjecting(ctx, client, v, pod); err != nil {
		return res, err
	}
	deployments, err := createFleet(ctx, client, v.ns, pod, o.deployments, 0)
	if err != nil {
		return res, err
	}
	w, err := cluster.WatchPods(ctx, client, v.ns, v.injected)
	if err != nil {
		return res, err
	}
	defer w.Close()
	before, err := b.fleetSnapshot(ctx, graft)
	if err != nil {
		return res, err
	}
	total := o.deployments * o.replicas
	loadStart := loadAverage()
	start := time.Now()
	if err := scaleAll(ctx, client, v.ns, deployments, o.replicas); err != nil {
		return res, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, o.fleetTimeout)
	defer cancel()
	progress := func(created, ready int) {
		fmt.Fprintf(stderr, "fleet: %s: %d Pods created, %d Ready after %s\n", name, created, ready, time.Since(start).Round(time.Second))
	}
	// The measurement ends with the last create; kwok's readying the
	// rest is a simulation's pace, waited for only with -fleet-ready.
	ready := 0
	if o.fleetReady {
		ready = total
	}
	if err := w.WaitCounts(waitCtx, total, ready, progress); err != nil {
		return res, err
	}
	after, err := b.fleetSnapshot(ctx, graft)
	if err != nil {
		return res, err
	}
	res = fleetFigures(v, w.Seen(), start, before, after)
	res.Load = [2]float64{loadStart, loadAverage()}
	if res.FailedCreates > 0 {
		if res.FailedEvents, err = controllerErrors(filepath.Join(b.dir, "kube-controller-manager.log")); err != nil {
			return res, err
		}
		for msg, n := range res.FailedEvents {
			fmt.Fprintf(stderr, "fleet: %s: %d× %s\n", name, n, msg)
		}
	}
	return res, nil
}

// controllerErrors counts the ReplicaSet controller's failed syncs in its
// log by error (the API server's refusal as the controller got it; one
// per sync, whose batch of creates stops at its first refusal), the
// object names and the webhook's port cut out. The log, not Events: on a
// loaded API server the controller's Events are what gets dropped first.
func controllerErrors(log string) (map[string]int, error) {
	f, err := os.Open(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := syncFailed.FindStringSubmatch(sc.Text())
		if m == nil || staleCache.MatchString(m[1]) {
			continue
		}
		msg := strings.ReplaceAll(m[1], `\"`, `"`)
		msg = generatedName.ReplaceAllString(msg, "fleet-…")
		out[loopbackPort.ReplaceAllString(msg, "127.0.0.1:…")]++
	}
	return out, sc.Err()
}

var (
	// syncFailed is the ReplicaSet controller's log line of a failed sync.
	syncFailed = regexp.MustCompile(`replica_set\.go:\d+\] .*sync \\"[^"]*\\" failed with (.*)" logger=`)
	// generatedName is a fleet ReplicaSet's or Pod's name.
	generatedName = regexp.MustCompile(`fleet-[0-9]{3}-[0-9a-z]+(-[0-9a-z]*)?`)
	loopbackPort  = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
	// staleCache is the controller waiting for its informer to catch up
	// with its own writes, no refusal.
	staleCache = regexp.MustCompile(`^read version: \d+ is not as new as written version`)
)

// quietClient is a client of c that drops the API server's warnings (the
// corpus Pod repeats port names on purpose).
func quietClient(c *cluster.Cluster) (kubernetes.Interface, error) {
	cfg := c.RESTConfig()
	cfg.WarningHandler = rest.NoWarnings{}
	return kubernetes.NewForConfig(cfg)
}

// setupServed serves graft as deploy/base does, two replicas behind its
// Service, with the configuration and webhook registration of manifests
// (deploy/base, or one of deploy/examples), for a namespace labelled
// labels.
func setupServed(ctx context.Context, b *bench, manifests string, labels map[string]string) (variant, *cluster.Served, error) {
	v := variant{name: "graft", ns: "fleet-graft", injected: injectedBy(b.sidecar)}
	shipped := *b.shipped
	if manifests != filepath.Join("..", "deploy", "base") {
		own, err := cluster.ReadManifests(manifests)
		if err != nil {
			return v, nil, err
		}
		if own.Webhook == nil {
			return v, nil, fmt.Errorf("%s: no MutatingWebhookConfiguration", manifests)
		}
		shipped.Webhook = own.Webhook
		// The example's own guarantee: it knows the example's revisions
		// and tags, which deploy/base's does not.
		if own.Policy != nil && own.Binding != nil {
			shipped.Policy, shipped.Binding = own.Policy, own.Binding
		}
	}
	served, err := b.c.ServeGraft(ctx, &shipped, []string{"graft-a", "graft-b"},
		"--config="+filepath.Join(manifests, "config.yaml"),
		"--templates-dir="+filepath.Join("..", "deploy", "base", "templates"))
	if err != nil {
		return v, served, err
	}
	v.webhook = served.Webhook
	return v, served, b.c.CreateNamespace(ctx, v.ns, labels)
}

// createFleet creates n Deployments of pod's spec in ns, each of replicas
// Pods, and waits until the deployment controller has seen each (and
// made its ReplicaSet). It returns their names.
func createFleet(ctx context.Context, client kubernetes.Interface, ns string, pod *corev1.Pod, n, replicas int) ([]string, error) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("fleet-%03d", i)
	}
	err := forEach(ctx, names, func(ctx context.Context, name string) error {
		_, err := client.AppsV1().Deployments(ns).Create(ctx, fleetDeployment(name, pod, int32(replicas)), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	err = proc.Poll(ctx, nil, 200*time.Millisecond, func(ctx context.Context) error {
		list, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		seen := 0
		for _, d := range list.Items {
			if d.Status.ObservedGeneration >= d.Generation {
				seen++
			}
		}
		if seen < n {
			return fmt.Errorf("%d of %d Deployments seen by the deployment controller", seen, n)
		}
		return nil
	})
	return names, err
}

// fleetPod is the Pod a fleet's Deployments run, as a user writes one:
// one container with a port, resource requests, a readiness probe and a
// scratch volume. It is lighter than the load tests' corpus Pod (two
// containers and dozens of variables), so ten thousand of them fit a
// shared 2-core machine's API server and etcd. (The volume matters to
// replay: with one, graft's patch appends its volumes, as it does to the
// Pod the API server shows it, which has the token volume.)
func fleetPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "fleet-", Labels: map[string]string{"app": "fleet"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "web", Image: "registry.example/web:1.0",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
				}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
			}},
			Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

// fleetDeployment is a Deployment of pod: its labels, annotations and
// spec as the template, selected by one label of its own.
func fleetDeployment(name string, pod *corev1.Pod, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"fleet.graft.dev/deployment": name}
	for k, v := range pod.Labels {
		if k != appsv1.DefaultDeploymentUniqueLabelKey {
			labels[k] = v
		}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet.graft.dev/deployment": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: pod.Annotations},
				Spec:       *pod.Spec.DeepCopy(),
			},
		},
	}
}

// scaleAll sets every Deployment's replicas, eight at a time, as
// `kubectl scale` would.
func scaleAll(ctx context.Context, client kubernetes.Interface, ns string, deployments []string, replicas int) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	return forEach(ctx, deployments, func(ctx context.Context, name string) error {
		_, err := client.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "scale")
		return err
	})
}

// forEach runs f on each item, eight at a time, and returns the first
// error.
func forEach(ctx context.Context, items []string, f func(context.Context, string) error) error {
	work := make(chan string)
	errs := make(chan error, len(items))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for it := range work {
				if err := f(ctx, it); err != nil {
					errs <- fmt.Errorf("%s: %w", it, err)
				}
			}
		})
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// fleetSnap is what the fleet phase reads before and after a run.
type fleetSnap struct {
	webhooks     map[string]histo.Histogram
	failed       float64            // Pod creates refused
	failedCodes  map[string]float64 // by HTTP code
	failOpen     map[string]float64 // by webhook
	policyDenied float64            // by graft's guarantee policy
	apiserverCPU time.Duration
	graftCPU     time.Duration
	graftFailed  map[string]float64 // graft's failure-mode answers by reason
}

// fleetSnapshot reads the API server's counters and the CPU time of the
// API server and of graft's replicas.
func (b *bench) fleetSnapshot(ctx context.Context, graft []*cluster.Replica) (fleetSnap, error) {
	hc, token := b.c.APIServerHTTP()
	defer hc.CloseIdleConnections()
	api, err := scrapeURL(ctx, hc, b.c.APIServerURL()+"/metrics", token)
	if err != nil {
		return fleetSnap{}, err
	}
	s := fleetSnap{
		webhooks: byLabel(api[webhookDuration], "name", func(m *dto.Metric) bool { return histo.Label(m, "type") == webhookAdmitType }),
	}
	s.failedCodes, s.failOpen = map[string]float64{}, map[string]float64{}
	for _, m := range api["apiserver_request_total"].GetMetric() {
		if histo.Label(m, "verb") == "POST" && histo.Label(m, "resource") == "pods" &&
			histo.Label(m, "subresource") == "" && histo.Label(m, "code") != "201" {
			s.failed += m.GetCounter().GetValue()
			s.failedCodes[histo.Label(m, "code")] += m.GetCounter().GetValue()
		}
	}
	for _, m := range api["apiserver_admission_webhook_fail_open_count"].GetMetric() {
		s.failOpen[histo.Label(m, "name")] += m.GetCounter().GetValue()
	}
	for _, m := range api["apiserver_validating_admission_policy_check_total"].GetMetric() {
		if histo.Label(m, "policy") == b.shipped.Policy.Name && histo.Label(m, "enforcement_action") == "deny" {
			s.policyDenied += m.GetCounter().GetValue()
		}
	}
	if s.apiserverCPU, err = proc.CPUTime(b.c.APIServerPID()); err != nil {
		return s, err
	}
	s.graftFailed = map[string]float64{}
	for _, r := range graft {
		cpu, err := proc.CPUTime(r.Pid())
		if err != nil {
			return s, err
		}
		s.graftCPU += cpu
		mf, err := scrapeURL(ctx, http.DefaultClient, r.AdminURL+"/metrics", "")
		if err != nil {
			return s, err
		}
		for _, m := range mf["graft_admission_failures_total"].GetMetric() {
			s.graftFailed[histo.Label(m, "reason")] += m.GetCounter().GetValue()
		}
	}
	return s, nil
}

// fleetFigures turns a run's Pods and counters into its figures.
func fleetFigures(v variant, pods []cluster.SeenPod, start time.Time, before, after fleetSnap) fleetResult {
	r := fleetResult{Variant: v.name, Pods: len(pods)}
	var created, ready time.Time
	for _, p := range pods {
		if p.Created.After(created) {
			created = p.Created
		}
		if !p.Ready.IsZero() {
			r.Ready++
			if p.Ready.After(ready) {
				ready = p.Ready
			}
		}
		if !p.Marked {
			r.Uninjected++
		}
	}
	r.CreatedS = created.Sub(start).Seconds()
	if r.Pods == 0 || r.CreatedS <= 0 {
		return r
	}
	n := float64(r.Pods)
	r.CreatedPerSec = n / r.CreatedS
	if r.Ready == r.Pods {
		r.ReadyS = ready.Sub(start).Seconds()
		r.ReadyPerSec = n / r.ReadyS
	}
	r.FailedCreates = int(after.failed - before.failed)
	for code, n := range after.failedCodes {
		if d := int(n - before.failedCodes[code]); d > 0 {
			if r.FailedByCode == nil {
				r.FailedByCode = map[string]int{}
			}
			r.FailedByCode[code] = d
		}
	}
	r.PolicyDenied = int(after.policyDenied - before.policyDenied)
	for reason, n := range after.graftFailed {
		if d := int(n - before.graftFailed[reason]); d > 0 {
			if r.GraftFailures == nil {
				r.GraftFailures = map[string]int{}
			}
			r.GraftFailures[reason] = d
		}
	}
	if v.webhook != "" {
		r.FailOpen = int(after.failOpen[v.webhook] - before.failOpen[v.webhook])
	}
	if v.webhook != "" {
		h := after.webhooks[v.webhook].Minus(before.webhooks[v.webhook])
		r.CallsPerCreate = h.Total / n
		if mean, err := h.Mean(); err == nil {
			r.WebhookMS = mean * 1e3
		}
	}
	r.APIServerCPUMS = float64((after.apiserverCPU - before.apiserverCPU).Microseconds()) / 1e3 / n
	if after.graftCPU > 0 {
		r.GraftCPUMS = float64((after.graftCPU - before.graftCPU).Microseconds()) / 1e3 / n
	}
	return r
}

// loadAverage is the machine's 1-minute load average, or -1.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l float64
	if _, err := fmt.Sscan(string(b), &l); err != nil {
		return -1
	}
	return l
}
