// Command podlatency measures what adding graft's default profile costs a
// Pod create through a real kube-apiserver (and etcd) on loopback, with
// the API server's default admission plugins on (ServiceAccount and
// LimitRanger re-run after the webhooks, each namespace has its default
// ServiceAccount): with no mutation, with graft (and its shipped
// ValidatingAdmissionPolicy), with the smallest webhook there can be
// adding graft's sidecar, with that webhook answering graft's own patch
// (which parts graft's server from its patch), with the conventional webhook (bench/peers/conventional), with a
// MutatingAdmissionPolicy that adds the same containers, and with the
// policies `graft export` writes for the same profile.
//
// Two phases, each in rounds: sequential creates, the variants taking
// turns so drift in the machine hits all alike, then bursts from
// concurrent clients, the variants in turn. The targets are judged by the
// median round, since one round's figures (a burst's tail above all) move
// with whatever else the machine runs. Besides the clients' latencies it reads the API
// server's own metrics: each webhook's duration and calls per create, and
// the cost of graft's guarantee policy. Run it with `make bench-e2e`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/e2e/internal/cluster"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == serveFixedArg {
		if err := serveFixedWebhook(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "podlatency: minimal webhook:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "podlatency:", err)
		os.Exit(1)
	}
}

// options are podlatency's flags.
type options struct {
	n, warmup       int
	burst, clients  int
	rounds          int
	burstRounds     int
	policyN         int
	policyRounds    int
	out             string
	profileDir      string
	profileDuration time.Duration

	// The fleet phase, run instead of the others with -fleet.
	fleet                          bool
	nodes, deployments, replicas   int
	fleetRounds, canaryDeployments int
	fleetTimeout                   time.Duration
	fleetReady                     bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("podlatency", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.n, "n", 1000, "Pods created per variant one at a time (measured)")
	fs.IntVar(&o.warmup, "warmup", 50, "Pods created per variant before measuring")
	fs.IntVar(&o.burst, "burst", 500, "Pods created per variant in the burst phase (0: no burst phase)")
	fs.IntVar(&o.clients, "clients", 20, "concurrent clients in the burst phase")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds of the sequential phase, -n creates per variant in each; its targets are judged by the median round")
	fs.IntVar(&o.burstRounds, "burst-rounds", 9, "rounds of the burst phase, one burst per variant in each; its target is judged by the median round")
	fs.IntVar(&o.policyN, "policy-n", 200, "Pods created per variant, one variant at a time, to tell what graft's ValidatingAdmissionPolicy costs")
	fs.IntVar(&o.policyRounds, "policy-rounds", 5, "rounds of the policy phase, -policy-n creates per variant in each; graft's policy against the floor is judged by the median round")
	fs.StringVar(&o.out, "out", "../bench/results", "where e2e-latest.md and e2e-latest.json go")
	fs.StringVar(&o.profileDir, "cpuprofile", "", "if set, afterwards take a kube-apiserver CPU profile per variant into this directory")
	fs.DurationVar(&o.profileDuration, "cpuprofile-duration", 20*time.Second, "how long each CPU profile runs (Pods created one at a time meanwhile)")
	fs.BoolVar(&o.fleet, "fleet", false, "run the fleet phase instead: Deployments scaled by the controllers on simulated nodes, per variant, and the canary on real rollouts; writes fleet-latest.md and .json")
	fs.IntVar(&o.nodes, "nodes", 100, "fleet: simulated nodes")
	fs.IntVar(&o.deployments, "deployments", 200, "fleet: Deployments scaled from 0")
	fs.IntVar(&o.replicas, "replicas", 50, "fleet: replicas each Deployment is scaled to")
	fs.IntVar(&o.fleetRounds, "fleet-rounds", 1, "fleet: rounds, every variant once in each, the order rotating")
	fs.IntVar(&o.canaryDeployments, "canary-deployments", 100, "fleet: Deployments rolled out on the canary tag")
	fs.DurationVar(&o.fleetTimeout, "fleet-timeout", 30*time.Minute, "fleet: how long one variant's Pods may take to be created (and Ready)")
	fs.BoolVar(&o.fleetReady, "fleet-ready", false, "fleet: wait until every Pod is Ready too (kwok's pace), and report when")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.fleet {
		if o.nodes <= 0 || o.deployments <= 0 || o.replicas <= 0 || o.fleetRounds <= 0 || o.canaryDeployments <= 0 {
			return o, errors.New("-nodes, -deployments, -replicas, -fleet-rounds and -canary-deployments must be > 0")
		}
		return o, nil
	}
	if o.n <= 0 || o.warmup < 0 || o.burst < 0 || o.clients <= 0 || o.policyN <= 0 || o.policyRounds <= 0 || o.rounds <= 0 || o.burstRounds <= 0 {
		return o, errors.New("-n, -clients, -rounds, -burst-rounds, -policy-n and -policy-rounds must be > 0, -warmup and -burst >= 0")
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.fleet {
		return runFleet(ctx, o, stdout, stderr)
	}
	conventionalBin := os.Getenv("GRAFT_BENCH_CONVENTIONAL")
	if conventionalBin == "" {
		return errors.New("GRAFT_BENCH_CONVENTIONAL is not set: run with `make bench-e2e`")
	}
	// Admission is what is measured: no nodes, so no scheduler binds and
	// no kubelet updates the Pods while they are created.
	c, opts, finish, err := cluster.StartTool(ctx, "podlatency", stderr, func(o *cluster.Options) { o.Nodes = 0 })
	if err != nil {
		return err
	}
	defer finish(&err)
	b, err := newBench(c, opts.Dir, conventionalBin)
	if err != nil {
		return err
	}
	defer b.close()
	pod, err := corpusPod()
	if err != nil {
		return err
	}
	// The corpus Pod repeats port names on purpose; its warnings are noise here.
	cfg := c.RESTConfig()
	cfg.WarningHandler = rest.NoWarnings{}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	var variants []variant
	for _, setup := range setups {
		v, err := setup(ctx, b)
		if err != nil {
			return err
		}
		variants = append(variants, v)
	}
	for _, v := range variants {
		if err := waitInjecting(ctx, client, v, pod); err != nil {
			return err
		}
	}

	fmt.Fprintf(stderr, "podlatency: %d warm-up and %d rounds of %d measured Pod creates per variant, one at a time\n", o.warmup, o.rounds, o.n)
	seq, err := measureSequential(ctx, b, client, variants, pod, o.warmup, o.n, o.rounds, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "podlatency: %d rounds of %d Pod creates per variant, one variant at a time, for the admission policy's cost\n", o.policyRounds, o.policyN)
	policies, err := measurePolicies(ctx, b, client, variants, pod, o.policyN, o.policyRounds)
	if err != nil {
		return err
	}
	var burst [][]phaseResult
	if o.burst > 0 {
		fmt.Fprintf(stderr, "podlatency: %d rounds of bursts of %d Pod creates from %d clients per variant\n", o.burstRounds, o.burst, o.clients)
		if burst, err = measureBursts(ctx, b, client, variants, pod, o.burst, o.clients, o.burstRounds, stderr); err != nil {
			return err
		}
	}
	if o.profileDir != "" {
		if err := profileVariants(ctx, b, client, variants, pod, o.profileDir, o.profileDuration, stderr); err != nil {
			return err
		}
	}
	version, err := c.ServerVersion()
	if err != nil {
		return err
	}
	rep := newReport(version, variants, seq, burst, policies)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	return rep.write(o.out, stdout)
}

// corpusPod is the load tests' small corpus Pod, to be created by name. It
// runs as its namespace's default ServiceAccount, the one the harness
// creates in every namespace.
func corpusPod() (*corev1.Pod, error) {
	var rev struct {
		Request struct {
			Object json.RawMessage `json:"object"`
		} `json:"request"`
	}
	if err := json.Unmarshal(corpus.Review(corpus.Small), &rev); err != nil {
		return nil, err
	}
	var p corev1.Pod
	if err := json.Unmarshal(rev.Request.Object, &p); err != nil {
		return nil, err
	}
	p.Namespace = ""
	p.OwnerReferences = nil
	p.Spec.ServiceAccountName = ""
	return &p, nil
}
