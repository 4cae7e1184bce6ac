// Command nodebench measures what graft's sidecars cost a Pod on a real
// node (package realcluster: kubelet, containerd, runc, the CNI bridge,
// graft installed from deploy/base and running its own image): for no
// webhook (a namespace not opted in) and for each profile deploy/base
// ships, -pods Pods created one after another, each from create to Ready
// (the client's clock, from before the create to the watch event saying
// Ready) and from create to the app container's start (its own log, to
// the nanosecond); then, for each profile, one Pod left idle for -idle
// and each container's memory (the kubelet's working set, from the CRI,
// and the main process's resident set). Run it with `make bench-node`.
//
// The sidecars run stand-in images where the real program cannot run
// here (e2e/internal/standin): their start and memory are the stand-ins',
// not Envoy's, the Collector's, Vault's or Fluent Bit's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/e2e/internal/realcluster"
	"github.com/graftdev/graft/internal/names"
)

func main() {
	pods := flag.Int("pods", 50, "Pods per profile, created one after another")
	idle := flag.Duration("idle", 10*time.Second, "how long the memory Pod idles before it is read")
	only := flag.String("profiles", "", "comma-separated profiles to measure (default: every shipped one)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, os.Stderr, *pods, *idle, *only); err != nil {
		fmt.Fprintln(os.Stderr, "nodebench:", err)
		os.Exit(1)
	}
}

// scenario is what a namespace is labelled with: no webhook, or a profile.
type scenario struct{ name, profile string }

type result struct {
	scenario
	ready, appStart []time.Duration
	memory          []containerMemory
	err             error
}

type containerMemory struct {
	name, image     string
	workingSet, rss uint64
}

func run(ctx context.Context, stdout, stderr io.Writer, pods int, idle time.Duration, only string) (err error) {
	if pods < 2 {
		return errors.New("-pods: at least 2")
	}
	opts, err := realcluster.OptionsFromEnv("..")
	if err != nil {
		return err
	}
	if _, err := realcluster.Check(opts.Kubelet); err != nil {
		return err
	}
	if opts.Cluster.Dir, err = os.MkdirTemp(cluster.TempRoot(), "graft-nodebench-"); err != nil {
		return err
	}
	started := time.Now()
	fmt.Fprintf(stderr, "nodebench: starting a control plane and a real node; logs in %s\n", opts.Cluster.Dir)
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	c, err := realcluster.Start(startCtx, opts)
	cancel()
	defer func() {
		if err != nil && c != nil {
			fmt.Fprint(stderr, c.Logs(8<<10))
		}
		if c != nil {
			if serr := c.Stop(); serr != nil && err == nil {
				err = serr
			}
		}
		if err == nil {
			os.RemoveAll(opts.Cluster.Dir)
		} else {
			fmt.Fprintln(stderr, "nodebench: logs kept in", opts.Cluster.Dir)
		}
	}()
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "nodebench: ready in %s\n", time.Since(started).Round(time.Second))

	scenarios := []scenario{{name: "no webhook"}}
	profiles, err := shippedProfiles(c.Graft.Config)
	if err != nil {
		return err
	}
	for _, p := range profiles {
		if only == "" || slices.Contains(strings.Split(only, ","), p) {
			scenarios = append(scenarios, scenario{name: p, profile: p})
		}
	}
	var results []result
	for i, s := range scenarios {
		r := result{scenario: s}
		r.ready, r.appStart, r.memory, r.err = measure(ctx, c, fmt.Sprintf("bench-%d", i), s, pods, idle, stderr)
		if r.err != nil {
			fmt.Fprintf(stderr, "nodebench: %s: %v\n", s.name, r.err)
		}
		results = append(results, r)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	report(stdout, results, pods, idle)
	return nil
}

func shippedProfiles(config []byte) ([]string, error) {
	var cfg struct {
		Profiles map[string]any `json:"profiles"`
	}
	if err := yaml.Unmarshal(config, &cfg); err != nil {
		return nil, err
	}
	var out []string
	for p := range cfg.Profiles {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

var appStarted = regexp.MustCompile(`app started at (\S+)`)

// measure creates pods Pods in a new namespace for s, one at a time,
// each deleted once measured, then one more left idle for its memory.
func measure(ctx context.Context, c *realcluster.Cluster, ns string, s scenario, pods int, idle time.Duration, stderr io.Writer) (ready, appStart []time.Duration, mem []containerMemory, err error) {
	labels := map[string]string{}
	if s.profile != "" {
		labels[names.Inject] = s.profile
	}
	if err := c.CreateNamespace(ctx, ns, labels); err != nil {
		return nil, nil, nil, err
	}
	defer c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	if s.profile != "" {
		if err := c.WaitInjecting(ctx, ns); err != nil {
			return nil, nil, nil, err
		}
	}
	// The first Pod of a namespace warms caches (the kubelet's, the
	// sidecars' pages): not counted.
	for i := range pods + 1 {
		name := fmt.Sprintf("p-%d", i)
		r, a, err := onePod(ctx, c, ns, name)
		if err != nil {
			return ready, appStart, nil, fmt.Errorf("pod %s: %w\n%s", name, err, c.PodsReport(context.Background(), ns))
		}
		if i > 0 {
			ready, appStart = append(ready, r), append(appStart, a)
		}
		if err := deletePod(ctx, c, ns, name); err != nil {
			return ready, appStart, nil, err
		}
	}
	fmt.Fprintf(stderr, "nodebench: %s: %d Pods measured\n", s.name, pods)
	mem, err = idleMemory(ctx, c, ns, idle)
	return ready, appStart, mem, err
}

// benchPod is the measured Pod: the tests' app container, restricted,
// ready once it serves.
func benchPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "bench"}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"type": "real"},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name:  "app",
				Image: realcluster.AppImage,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
				}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intOrName("http")}},
					PeriodSeconds: 1,
				},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000), AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem: ptr.To(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
		},
	}
}

// onePod creates a Pod and returns how long it took to be Ready and for
// its app container to start, from just before the create.
func onePod(ctx context.Context, c *realcluster.Cluster, ns, name string) (ready, appStart time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	pods := c.Client.CoreV1().Pods(ns)
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return 0, 0, err
	}
	defer w.Stop()
	created := time.Now()
	if _, err := pods.Create(ctx, benchPod(name), metav1.CreateOptions{}); err != nil {
		return 0, 0, err
	}
	for ready == 0 {
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, 0, errors.New("watch closed")
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if ev.Type == watch.Error || !isPod {
				return 0, 0, fmt.Errorf("watch: %v", ev.Object)
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					ready = time.Since(created)
				}
			}
		}
	}
	log, err := pods.GetLogs(name, &corev1.PodLogOptions{Container: "app"}).DoRaw(ctx)
	if err != nil {
		return 0, 0, err
	}
	m := appStarted.FindSubmatch(log)
	if m == nil {
		return 0, 0, fmt.Errorf("the app's log says nothing of its start: %s", log)
	}
	at, err := time.Parse(time.RFC3339Nano, string(m[1]))
	if err != nil {
		return 0, 0, err
	}
	return ready, at.Sub(created), nil
}

func deletePod(ctx context.Context, c *realcluster.Cluster, ns, name string) error {
	pods := c.Client.CoreV1().Pods(ns)
	if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		return err
	}
	for {
		if _, err := pods.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return nil // gone
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// idleMemory runs one Pod, lets it idle, and reads each container's memory.
func idleMemory(ctx context.Context, c *realcluster.Cluster, ns string, idle time.Duration) ([]containerMemory, error) {
	if _, _, err := onePod(ctx, c, ns, "idle"); err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(idle):
	}
	p, err := c.Client.CoreV1().Pods(ns).Get(ctx, "idle", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	n, err := c.NodeFor(p)
	if err != nil {
		return nil, err
	}
	var out []containerMemory
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if cs.State.Running == nil {
			continue // a plain init container, done
		}
		m, err := n.ContainerMemory(ctx, cs.ContainerID)
		if err != nil {
			return out, err
		}
		out = append(out, containerMemory{name: cs.Name, image: cs.Image, workingSet: m.WorkingSet, rss: m.RSS})
	}
	return out, nil
}

// quantile is the nearest-rank q-quantile of sorted d.
func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func report(w io.Writer, results []result, pods int, idle time.Duration) {
	fmt.Fprintf(w, "nodebench %s: %d Pods per profile, one after another, on one real node (stand-in sidecar images)\n\n",
		time.Now().UTC().Format("2006-01-02"), pods)
	fmt.Fprintln(w, "| profile | create → Ready p50 | p99 | create → app start p50 | p99 | app start after no webhook's (p50) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	var base time.Duration
	for _, r := range results {
		if r.err != nil || len(r.ready) == 0 {
			fmt.Fprintf(w, "| %s | failed: %s | | | | |\n", r.name, firstLine(r.err))
			continue
		}
		p50 := quantile(r.appStart, 0.5)
		if r.profile == "" {
			base = p50
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r.name,
			ms(quantile(r.ready, 0.5)), ms(quantile(r.ready, 0.99)), ms(p50), ms(quantile(r.appStart, 0.99)), signedMS(p50-base))
	}
	fmt.Fprintf(w, "\nIdle memory, each container of one Pod %s after it was Ready (working set from the CRI; RSS of the main process):\n\n", idle)
	fmt.Fprintln(w, "| profile | container | image | working set | RSS |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range results {
		for _, m := range r.memory {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", r.name, m.name, m.image, mib(m.workingSet), mib(m.rss))
		}
	}
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(fmt.Sprint(err), "\n")
	return s
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
func signedMS(d time.Duration) string {
	return fmt.Sprintf("%+.0f ms", float64(d)/float64(time.Millisecond))
}
func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func intOrName(name string) intstr.IntOrString { return intstr.FromString(name) }
