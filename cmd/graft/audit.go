package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/internal/live"
	"github.com/graftdev/graft/internal/names"
)

// exitFound is audit's exit code when a Pod is in a --fail-on class (1 is
// any error, as for every command).
const exitFound = 3

type auditFlags struct {
	cluster       clusterFlags
	namespace     string
	allNamespaces bool
	output        string
	workloads     bool
	failOn        string
	chunkSize     int64
	config        string
	templatesDir  string
	serve         string        // --serve: the exporter's address (audit_serve.go)
	interval      time.Duration // --interval, with --serve
}

func newAuditCmd() *cobra.Command {
	var f auditFlags
	cmd := &cobra.Command{
		Use:     "audit [flags]",
		Short:   "Classify every running Pod by what graft would do with it now",
		Example: auditExample,
		Long: `audit reads the cluster's Pods, Namespaces, ReplicaSets and Jobs (paged
LISTs) and runs every Pod through the engine graft serve runs, with the
configuration graft runs with in the cluster, as if the Pod were created
now, in the namespace selection of the shipped webhooks. That
configuration is what graft's Deployment (--graft-namespace,
--graft-deployment) mounts where graft serve's --config and
--templates-dir point, read from those ConfigMaps; --config and
--templates-dir name files instead. A line on stderr says which was used.

Each Pod gets one class: current, stale, missing, conflict, spoofed,
opted-out or not-selected, with a cause and a detail; --workloads
aggregates them per Deployment, StatefulSet, DaemonSet, CronJob, Job or
bare Pod.

As kubectl does, audit reads one namespace: -n NAMESPACE, else the
kubeconfig context's namespace (in a cluster, the Pod's own), else
default; -A (--all-namespaces) audits every namespace.
-o table (default), json (schema audit.graft.dev/v1alpha1) or prometheus
(the text format, for node_exporter's textfile collector). Pods are
written as they are classified, a LIST page at a time (the table aligned
per 500 lines), so memory does not grow with the fleet; an error midway
cuts the output short and exits 1.
--serve ADDR keeps running as a Prometheus exporter: an audit every
--interval (5m), the newest report on /metrics, for the audit alerts
(deploy/components/audit runs it so).
Exit codes: 0 done; 1 an error; 3 a Pod is in a class --fail-on lists.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAudit(cmd, &f)
		},
	}
	fl := cmd.Flags()
	f.cluster.register(cmd)
	f.cluster.registerGraft(cmd)
	fl.StringVarP(&f.namespace, names.FlagNamespace, "n", "", "namespace to audit (default: the kubeconfig context's)")
	fl.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "audit every namespace")
	fl.StringVarP(&f.output, names.FlagOutput, names.FlagOutputShort, "table", "output format: table, json or prometheus")
	registerFormats(cmd, "table", "json", "prometheus")
	fl.BoolVar(&f.workloads, "workloads", false, "one line per workload instead of per Pod (table output)")
	fl.StringVar(&f.failOn, "fail-on", "", "exit with code 3 when a Pod is in one of these classes: comma-separated, e.g. stale,missing,spoofed")
	fl.Int64Var(&f.chunkSize, "chunk-size", 500, "objects per LIST page")
	fl.StringVar(&f.config, names.FlagConfig, "", "engine configuration file (YAML), as given to graft serve (default: the one graft's Deployment mounts)")
	fl.StringVar(&f.templatesDir, names.FlagTemplatesDir, "", "directory of templates overlaying the built-in ones")
	f.registerServe(fl)
	return cmd
}

// auditScope is the namespace audit reads, "" for every one: with -A all,
// else the one Connect chose as kubectl would (-n, the context's, default).
func auditScope(cluster *live.Cluster, all bool) string {
	if all {
		return ""
	}
	return cluster.Namespace()
}

func runAudit(cmd *cobra.Command, f *auditFlags) error {
	if f.serve != "" {
		return runAuditServe(cmd, f)
	}
	if err := checkFormat(f.output, "table", "json", "prometheus"); err != nil {
		return err
	}
	if f.allNamespaces && f.namespace != "" {
		return errors.New("give either -n NAMESPACE or -A, not both")
	}
	if f.workloads && f.output != "table" {
		return errors.New("--workloads is a table view: -o json and -o prometheus always carry the workloads")
	}
	if f.chunkSize < 1 {
		return fmt.Errorf("--chunk-size %d: want at least 1", f.chunkSize)
	}
	failOn, err := audit.ParseClasses(f.failOn)
	if err != nil {
		return fmt.Errorf("--fail-on: %w", err)
	}
	engine, source, err := fileEngine(f.config, f.templatesDir)
	if err != nil {
		return err
	}
	cluster, err := live.Connect(f.cluster.config(f.namespace))
	if err != nil {
		return err
	}
	if engine == nil {
		if engine, source, err = f.cluster.liveEngine(commandContext(cmd), cluster, "", ""); err != nil {
			return err
		}
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "graft: configuration:", source)
	scope := auditScope(cluster, f.allNamespaces)
	// The Pods stream out as they are classified: a fleet's report is
	// never held whole.
	start := time.Now()
	out, err := audit.NewWriter(cmd.OutOrStdout(), f.output, f.workloads, start)
	if err != nil {
		return err
	}
	rep, err := cluster.Audit(commandContext(cmd), audit.New(engine), scope, f.chunkSize, out, start)
	if err != nil {
		return err
	}
	if err := out.Close(rep); err != nil {
		return err
	}
	if rep.Any(failOn) {
		counts := rep.Count()
		var found []string
		for _, c := range failOn {
			if counts[c] > 0 {
				found = append(found, fmt.Sprintf("%d %s", counts[c], c))
			}
		}
		return &exitError{code: exitFound, err: fmt.Errorf("pods in --fail-on classes: %s", strings.Join(found, ", "))}
	}
	return nil
}
