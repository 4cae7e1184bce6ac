package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/internal/live"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/rollout"
)

// Exit codes of graft rollout --apply beyond 0 (done) and 1 (an error).
const (
	// exitStopped: an owner's rollout failed or timed out; the run
	// stopped there.
	exitStopped = 4
	// exitSkipped: the run completed, but owners were skipped because a
	// PodDisruptionBudget allowed no disruption.
	exitSkipped = 5
)

type rolloutFlags struct {
	cluster       clusterFlags
	namespace     string
	allNamespaces bool
	output        string
	classes       string
	dryRun        string
	apply         bool
	yes           bool
	inPlace       bool
	maxConcurrent int
	timeout       time.Duration
	chunkSize     int64
	config        string
	templatesDir  string
}

func newRolloutCmd() *cobra.Command {
	var f rolloutFlags
	cmd := &cobra.Command{
		Use:     "rollout [flags]",
		Short:   "Restart the workloads whose Pods run a stale sidecar or lack one",
		Example: rolloutExample,
		Long: `rollout audits the cluster as graft audit does and plans, per owner
(grouped by namespace and kind), what brings its Pods to what graft would
inject now: for Deployments, StatefulSets and DaemonSets whose Pods are
stale, or missing graft because it did not answer or the namespace was
labelled later, a restart as kubectl rollout restart does (the pod
template annotation kubectl.kubernetes.io/restartedAt). Pods of Jobs and
CronJobs, bare Pods, ReplicaSets without a Deployment and Pods a restart
would not inject are reported, never deleted. Like graft audit, it judges
by the configuration graft's Deployment mounts (--config and
--templates-dir name files instead) and says which on stderr.

It reads one namespace, as kubectl does: -n NAMESPACE, else the
kubeconfig context's namespace; -A (--all-namespaces) every namespace.

By default it only plans (--dry-run=client); --dry-run=server also sends
each change to the API server as a dry run, which validates and admits
it and persists nothing. --apply (--dry-run=none) acts: at most
--max-concurrent owners at a time, each restarted only if no
PodDisruptionBudget selecting its Pods allows zero disruptions at that
moment (such owners are skipped and reported), then waited for until its
rollout completes as kubectl rollout status judges it (observed
generation, updated and available replicas), within --timeout. The first
failure stops the run: the report says which owner failed and which were
not started.

--in-place upgrades, instead of restarting, the Pods whose new revision
changes nothing but the images of native sidecars: it patches
spec.initContainers[i].image and graft.dev/status (and graft.dev/injected)
so the kubelet restarts only those containers and the app keeps running.
A Pod it refuses, with a reason, is restarted with its owner.

A change that acts on more than one namespace says on how many; on a
terminal it is refused unless --yes confirms it.

Progress goes to stderr: a status line on a terminal, plain lines
otherwise. The plan or result goes to stdout: -o table (default) or json
(schema rollout.graft.dev/v1alpha1).
Exit codes: 0 planned (--dry-run), or every owner done (reported ones
aside); 1 an error; 4 a rollout failed or timed out and the run stopped;
5 done, but owners were skipped for their PodDisruptionBudget.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRollout(cmd, &f)
		},
	}
	fl := cmd.Flags()
	f.cluster.register(cmd)
	f.cluster.registerGraft(cmd)
	fl.StringVarP(&f.namespace, names.FlagNamespace, "n", "", "namespace to roll out (default: the kubeconfig context's)")
	fl.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "roll out every namespace")
	fl.StringVarP(&f.output, names.FlagOutput, names.FlagOutputShort, "table", "output format: table or json")
	fl.StringVar(&f.classes, "classes", "stale,missing", "audit classes whose Pods put their owner on the plan: stale, missing or both")
	fl.StringVar(&f.dryRun, "dry-run", "client", "client: only plan; server: also have the API server accept each change, persisting nothing; none: act (as --apply)")
	fl.Lookup("dry-run").NoOptDefVal = "client"
	fl.BoolVar(&f.apply, names.FlagApply, false, "carry out the plan (--dry-run=none)")
	fl.BoolVar(&f.yes, "yes", false, "act on more than one namespace without being asked to confirm")
	registerFormats(cmd, "table", "json")
	_ = cmd.RegisterFlagCompletionFunc("dry-run", cobra.FixedCompletions([]string{"none", "client", "server"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("classes", cobra.FixedCompletions([]string{"stale", "missing", "stale,missing"}, cobra.ShellCompDirectiveNoFileComp))
	fl.BoolVar(&f.inPlace, names.FlagInPlace, false, "upgrade Pods whose new revision changes only native sidecars' images in place, without a restart")
	fl.IntVar(&f.maxConcurrent, "max-concurrent", 1, "owners rolled out at once")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long each owner's rollout may take")
	fl.Int64Var(&f.chunkSize, "chunk-size", 500, "objects per LIST page")
	fl.StringVar(&f.config, names.FlagConfig, "", "engine configuration file (YAML), as given to graft serve (default: the one graft's Deployment mounts)")
	fl.StringVar(&f.templatesDir, names.FlagTemplatesDir, "", "directory of templates overlaying the built-in ones")
	return cmd
}

func runRollout(cmd *cobra.Command, f *rolloutFlags) error {
	if err := checkFormat(f.output, "table", "json"); err != nil {
		return err
	}
	if f.allNamespaces && f.namespace != "" {
		return errors.New("give either -n NAMESPACE or -A, not both")
	}
	mode, err := rolloutMode(f.dryRun, f.apply, cmd.Flags().Changed("dry-run"))
	if err != nil {
		return err
	}
	if f.maxConcurrent < 1 {
		return fmt.Errorf("--max-concurrent %d: want at least 1", f.maxConcurrent)
	}
	if f.timeout <= 0 || f.chunkSize < 1 {
		return errors.New("--timeout and --chunk-size must be positive")
	}
	classes, err := audit.ParseClasses(f.classes)
	if err != nil {
		return fmt.Errorf("--classes: %w", err)
	}
	for _, c := range classes {
		if c != audit.Stale && c != audit.Missing {
			return fmt.Errorf("--classes %s: rollout acts on stale and missing Pods only", c)
		}
	}
	engine, source, err := fileEngine(f.config, f.templatesDir)
	if err != nil {
		return err
	}
	cluster, err := live.Connect(f.cluster.config(f.namespace))
	if err != nil {
		return err
	}
	scope := auditScope(cluster, f.allNamespaces)
	ctx := commandContext(cmd)
	if engine == nil {
		if engine, source, err = f.cluster.liveEngine(ctx, cluster, "", ""); err != nil {
			return err
		}
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "graft: configuration:", source)
	start := time.Now()
	planner := rollout.NewPlanner(classes)
	var upgrader *rollout.Upgrader
	if f.inPlace {
		upgrader = rollout.NewUpgrader(engine)
	}
	err = cluster.Classify(ctx, audit.New(engine), scope, f.chunkSize, func(ns audit.Namespace, p audit.Pod, r *audit.PodResult) error {
		if !planner.Wants(r.Verdict) {
			return nil
		}
		var up *rollout.Upgrade
		var refusal rollout.Refusal
		var why string
		if upgrader != nil {
			up, refusal, why = upgrader.Plan(ns, p, r.Verdict)
		}
		planner.Add(r, up, refusal, why)
		return nil
	})
	if err != nil {
		return err
	}
	plan := planner.Plan()
	if mode == dryRunClient {
		return rollout.Write(cmd.OutOrStdout(), f.output, plan, true, start, 0)
	}
	stderr := cmd.ErrOrStderr()
	if mode == dryRunNone {
		outTerminal, _ := terminalWidth(cmd.OutOrStdout())
		if err := confirmNamespaces(stderr, plan, f.yes, outTerminal); err != nil {
			return err
		}
	}
	terminal, width := terminalWidth(stderr)
	prog := rollout.NewProgress(stderr, terminal, width, time.Now)
	applyErr := cluster.Apply(ctx, plan, live.RolloutOptions{MaxConcurrent: f.maxConcurrent, Timeout: f.timeout,
		Interval: 500 * time.Millisecond, Now: time.Now, DryRun: mode == dryRunServer}, prog)
	if err := rollout.Write(cmd.OutOrStdout(), f.output, plan, mode == dryRunServer, start, time.Since(start)); err != nil {
		return err
	}
	if applyErr != nil {
		return applyErr
	}
	return rolloutExit(plan)
}

// rolloutExit is the exit code an applied plan ends with.
func rolloutExit(plan *rollout.Plan) error {
	states := plan.States()
	if states[rollout.Failed] > 0 {
		for _, it := range plan.Items {
			if it.State == rollout.Failed {
				return &exitError{code: exitStopped, err: fmt.Errorf("stopped at %s: %s (%d owners not started)", it.Owner, it.Message, states[rollout.NotStarted])}
			}
		}
	}
	if n := states[rollout.SkippedBudget]; n > 0 {
		var which []string
		for _, it := range plan.Items {
			if it.State == rollout.SkippedBudget {
				which = append(which, it.Owner.String())
			}
		}
		return &exitError{code: exitSkipped, err: fmt.Errorf("%d owners skipped: a PodDisruptionBudget allows no disruption: %s", n, strings.Join(which, ", "))}
	}
	return nil
}

// terminalWidth reports whether w is a terminal, for the progress
// display, and its width in columns (0 if unknown).
func terminalWidth(w io.Writer) (bool, int) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false, 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return true, 0
	}
	return true, width
}

// The --dry-run modes, as kubectl spells them.
const (
	dryRunNone   = "none"   // act
	dryRunClient = "client" // plan only
	dryRunServer = "server" // plan, and have the API server accept each change
)

// rolloutMode is the --dry-run mode of the flags: --apply is
// --dry-run=none, and contradicts another mode given with it.
func rolloutMode(dryRun string, apply, dryRunChanged bool) (string, error) {
	switch dryRun {
	case dryRunNone, dryRunClient, dryRunServer:
	default:
		return "", fmt.Errorf("--dry-run=%s: want none, client or server", dryRun)
	}
	if !apply {
		return dryRun, nil
	}
	if dryRunChanged && dryRun != dryRunNone {
		return "", fmt.Errorf("--apply acts and --dry-run=%s does not: give one", dryRun)
	}
	return dryRunNone, nil
}

// confirmNamespaces says on stderr how many namespaces a plan acts on
// when more than one, and refuses to act on them from a terminal without
// --yes: a restart across a cluster is worth a second look. From a
// script (stdout not a terminal) it goes ahead.
func confirmNamespaces(stderr io.Writer, plan *rollout.Plan, yes, terminal bool) error {
	namespaces := map[string]bool{}
	owners := 0
	for _, it := range plan.Items {
		if it.Action != rollout.Report {
			namespaces[it.Namespace] = true
			owners++
		}
	}
	if len(namespaces) < 2 {
		return nil
	}
	if terminal && !yes {
		return fmt.Errorf("the plan acts on %d owners in %d namespaces: give --yes to go ahead (or -n NAMESPACE for one)", owners, len(namespaces))
	}
	_, err := fmt.Fprintf(stderr, "graft: acting on %d owners in %d namespaces\n", owners, len(namespaces))
	return err
}
