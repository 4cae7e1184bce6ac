// Command auditload measures `graft audit` over many Pods in a real
// kube-apiserver (and etcd) on loopback: it creates -pods Pods (through
// graft's shipped webhooks in half the namespaces, with the API server's
// default admission plugins on; no nodes, so nothing runs them), each
// namespace's owned by a Deployment's ReplicaSet, then runs graft audit
// as a child process -runs times and reports its wall time and peak
// resident memory (getrusage of the child, started by a small process of
// its own: see runMeasured). Given several sizes
// (-pods 10000,100000), it audits at each, adding Pods in between, which
// shows how wall time and memory grow with the fleet. Run it with `make
// bench-audit` (10,000 Pods) or `make bench-audit-fleet` (10,000, then
// 100,000).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/internal/names"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == measuredArg {
		os.Exit(runMeasured(os.Args[2:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "auditload:", err)
		os.Exit(1)
	}
}

type options struct {
	sizes                     []int // fleet sizes, ascending: Pods created before each set of runs
	namespaces, runs, workers int
	chunk                     int
	// settle is the pause between creating Pods and auditing them, for
	// the API server and etcd to finish what the creates left them.
	settle    time.Duration
	out, name string // where the results go, and their file name
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	var o options
	fs := flag.NewFlagSet("auditload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pods := fs.String("pods", "10000", "Pods to create; a comma-separated ascending list (10000,100000) audits at each size in turn, adding Pods in between")
	fs.IntVar(&o.namespaces, "namespaces", 20, "namespaces to spread them over (half opted in)")
	fs.IntVar(&o.runs, "runs", 5, "graft audit runs measured")
	fs.IntVar(&o.workers, "workers", 16, "concurrent creates")
	fs.IntVar(&o.chunk, "chunk-size", 500, "graft audit --chunk-size")
	fs.DurationVar(&o.settle, "settle", 30*time.Second, "pause after creating Pods before auditing them")
	fs.StringVar(&o.out, "out", "", "if set, write the results (-name, .md and .json) in this directory")
	fs.StringVar(&o.name, "name", "audit-latest", "the results' file name, without extension")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, f := range strings.Split(*pods, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || (len(o.sizes) > 0 && n <= o.sizes[len(o.sizes)-1]) {
			return fmt.Errorf("-pods %q: want ascending counts above 0", *pods)
		}
		o.sizes = append(o.sizes, n)
	}
	if o.namespaces <= 0 || o.runs <= 0 || o.workers <= 0 {
		return errors.New("-namespaces, -runs and -workers must be > 0")
	}
	// The Pods are this command's, made as a ReplicaSet would make them:
	// the replicaset and deployment controllers are off, so that they do
	// not delete Pods beyond a ReplicaSet's replicas (or take over ones
	// its selector does not match), and no nodes run: audit reads
	// Pods, it needs none scheduled.
	c, opts, finish, err := cluster.StartTool(ctx, "auditload", stderr, func(o *cluster.Options) {
		o.Nodes = 0
		o.ControllerManagerArgs = []string{"--controllers=*,-replicaset,-deployment"}
	})
	if err != nil {
		return err
	}
	defer finish(&err)
	shipped, err := cluster.LoadShipped("..")
	if err != nil {
		return err
	}
	if _, err := c.RegisterGraft(ctx, shipped); err != nil {
		return err
	}
	cfg := c.RESTConfig()
	cfg.WarningHandler = rest.NoWarnings{}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	owners, nsNames, err := setUp(ctx, c, client, o.namespaces)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(opts.Dir, "kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	version, err := c.ServerVersion()
	if err != nil {
		return err
	}
	res := results{Kubernetes: version, Setup: fmt.Sprintf("kube-apiserver %s (default admission plugins) on etcd 3.6, loopback; Pods created through graft's "+
		"shipped webhooks in %d namespaces, half opted in, each namespace's owned by a Deployment's ReplicaSet; `graft audit -A -o json "+
		"--chunk-size %d` run as a child of a small starter, wall time, CPU time and the child's peak RSS (getrusage), %d runs at each size", version, o.namespaces, o.chunk, o.runs)}
	created := 0
	for _, size := range o.sizes {
		start := time.Now()
		if err := populate(ctx, client, owners, nsNames, created, size, o.workers); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "auditload: %d Pods created in %s (%d in all)\n", size-created, time.Since(start).Round(time.Millisecond), size)
		created = size
		select {
		case <-time.After(o.settle):
		case <-ctx.Done():
			return ctx.Err()
		}
		load := loadAverage()
		set, err := measure(ctx, opts.Graft, kubeconfig, size, o, stdout)
		if err != nil {
			return err
		}
		set.LoadBefore, set.LoadAfter = load, loadAverage()
		res.Sizes = append(res.Sizes, set)
	}
	if line := res.perPod(); line != "" {
		fmt.Fprintln(stdout, line)
	}
	if o.out != "" {
		res.When = time.Now().UTC().Format("2006-01-02 15:04 UTC")
		return res.write(o.out, o.name)
	}
	return nil
}

// measure runs graft audit o.runs times over size Pods and prints each
// run and the medians.
func measure(ctx context.Context, graft, kubeconfig string, size int, o options, stdout io.Writer) (sizeResult, error) {
	set := sizeResult{Pods: size}
	var walls, cpus []time.Duration
	var rss []int64
	for i := range o.runs {
		wall, cpu, maxrss, listed, err := auditOnce(ctx, graft, kubeconfig, o.chunk)
		if err != nil {
			return set, err
		}
		if listed < size {
			return set, fmt.Errorf("graft audit reported %d Pods, want at least %d", listed, size)
		}
		line := fmt.Sprintf("run %d: %d Pods, wall %s, CPU %s, peak RSS %.1f MiB", i+1, listed, wall.Round(time.Millisecond), cpu.Round(time.Millisecond), float64(maxrss)/1024)
		fmt.Fprintln(stdout, line)
		set.Lines = append(set.Lines, line)
		set.Runs = append(set.Runs, runResult{WallS: wall.Seconds(), CPUS: cpu.Seconds(), PeakRSSMiB: float64(maxrss) / 1024})
		walls, cpus, rss = append(walls, wall), append(cpus, cpu), append(rss, maxrss)
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	slices.Sort(rss)
	set.MedianWallS, set.MedianCPUS = walls[len(walls)/2].Seconds(), cpus[len(cpus)/2].Seconds()
	set.MedianRSSMiB, set.MaxRSSMiB = float64(rss[len(rss)/2])/1024, float64(rss[len(rss)-1])/1024
	line := fmt.Sprintf("graft audit over %d Pods, %d runs: median wall %s (min %s, max %s), median CPU %s, median peak RSS %.1f MiB (max %.1f MiB)",
		size, o.runs, walls[len(walls)/2].Round(time.Millisecond), walls[0].Round(time.Millisecond), walls[len(walls)-1].Round(time.Millisecond),
		cpus[len(cpus)/2].Round(time.Millisecond), set.MedianRSSMiB, set.MaxRSSMiB)
	fmt.Fprintln(stdout, line)
	set.Lines = append(set.Lines, line)
	return set, nil
}

// setUp creates the namespaces, half of them opted in, and a Deployment
// and its ReplicaSet in each, whose controller reference it returns.
func setUp(ctx context.Context, c *cluster.Cluster, client kubernetes.Interface, namespaces int) ([]metav1.OwnerReference, []string, error) {
	owners := make([]metav1.OwnerReference, namespaces)
	nsNames := make([]string, namespaces)
	for i := range namespaces {
		nsNames[i] = fmt.Sprintf("load-%02d", i)
		var labels map[string]string
		if i%2 == 0 {
			labels = map[string]string{names.Inject: "enabled"}
		}
		if err := c.CreateNamespace(ctx, nsNames[i], labels); err != nil {
			return nil, nil, err
		}
		if labels != nil {
			if err := c.WaitInjecting(ctx, nsNames[i]); err != nil {
				return nil, nil, err
			}
		}
		ref, err := deployment(ctx, client, nsNames[i])
		if err != nil {
			return nil, nil, err
		}
		owners[i] = ref
	}
	return owners, nsNames, nil
}

// populate creates Pods from to to (exclusive), workers at a time, each
// in the namespace its number picks and owned by its ReplicaSet.
func populate(ctx context.Context, client kubernetes.Interface, owners []metav1.OwnerReference, nsNames []string, from, to, workers int) error {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				n := int(next.Add(1)) - 1
				if n >= to {
					return
				}
				ns := n % len(nsNames)
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%06d", n), OwnerReferences: []metav1.OwnerReference{owners[ns]}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/web:1"}}}}
				if _, err := client.CoreV1().Pods(nsNames[ns]).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create %s/%s: %w", nsNames[ns], p.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func deployment(ctx context.Context, client kubernetes.Interface, ns string) (metav1.OwnerReference, error) {
	zero, yes := int32(0), true
	labels := map[string]string{"app": "web"}
	spec := appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/web:1"}}}}}
	d, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return metav1.OwnerReference{}, err
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-7c5d9", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, Selector: spec.Selector, Template: spec.Template}}
	if rs, err = client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		return metav1.OwnerReference{}, err
	}
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}, nil
}

// auditOnce runs graft audit -A -o json and returns its wall time, its
// CPU time (user and system; its starter's few milliseconds included),
// its peak RSS in KiB, and how many Pods it reported. CPU time, unlike
// wall time, hardly depends on what else the machine runs.
func auditOnce(ctx context.Context, graft, kubeconfig string, chunk int) (wall, cpu time.Duration, maxrss int64, pods int, err error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	peak, err := os.CreateTemp("", "auditload-peak-")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer os.Remove(peak.Name())
	peak.Close()
	cmd := exec.CommandContext(ctx, self, measuredArg, peak.Name(),
		graft, "audit", "-A", "-o", "json", "--kubeconfig", kubeconfig, "--chunk-size", fmt.Sprint(chunk))
	cmd.Stderr = os.Stderr
	start := time.Now()
	out, err := cmd.Output()
	wall = time.Since(start)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("graft audit: %w", err)
	}
	// The starter's rusage from wait4 includes the children it waited for.
	cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if maxrss, err = readPeak(peak.Name()); err != nil {
		return 0, 0, 0, 0, err
	}
	var rep struct {
		Summary struct {
			Pods int `json:"pods"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("graft audit output: %w", err)
	}
	return wall, cpu, maxrss, rep.Summary.Pods, nil
}

// measuredArg, as auditload's first argument, makes it runMeasured.
const measuredArg = "-run-measured"

// runMeasured runs args[1:] with the standard streams it was given and
// writes the child's peak RSS (getrusage, KiB) to the file args[0],
// with its own peak RSS (VmHWM, KiB) after a space. It exists because a child's
// ru_maxrss counts the memory of whoever started it: Go starts children
// with clone(CLONE_VM|CLONE_VFORK), so the child runs in its parent's
// address space until exec, and the kernel keeps that space's peak as
// the child's own (exec_mmap). Started by auditload, whose memory grows
// with the Pods it creates and the reports it reads, graft audit would
// be charged with auditload's peak; started by this small process, it
// is charged with at most this one's, which the file carries so that
// readPeak can tell when that bound, not graft, is what was measured.
func runMeasured(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "auditload: "+measuredArg+" FILE COMMAND [ARG...]")
		return 2
	}
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "auditload:", err)
		return 1
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "auditload: no rusage for the child")
		return 1
	}
	// Not getrusage(RUSAGE_SELF): that counts auditload's peak in
	// turn. VmHWM is this address space's own, what the child inherits.
	self, err := vmHWM()
	if err != nil {
		fmt.Fprintln(os.Stderr, "auditload:", err)
		return 1
	}
	if err := os.WriteFile(args[0], fmt.Appendf(nil, "%d %d\n", ru.Maxrss, self), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "auditload:", err)
		return 1
	}
	return cmd.ProcessState.ExitCode()
}

// vmHWM is this process's peak resident set in KiB (/proc/self/status).
func vmHWM() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}

// readPeak reads what runMeasured wrote: the child's peak RSS in KiB,
// refused if it is no more than the starter's own (then the figure is
// the starter's, and graft's is unknown).
func readPeak(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("graft audit's peak RSS: %w", err)
	}
	var child, starter int64
	if _, err := fmt.Sscan(string(b), &child, &starter); err != nil {
		return 0, fmt.Errorf("graft audit's peak RSS: %q: %w", b, err)
	}
	if child <= starter {
		return 0, fmt.Errorf("graft audit's peak RSS (%d KiB) is no more than its starter's (%d KiB): not measured", child, starter)
	}
	return child, nil
}
