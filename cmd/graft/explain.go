package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/internal/live"
	"github.com/graftdev/graft/internal/offline"
)

func newExplainCmd() *cobra.Command {
	var f offlineFlags
	var cf clusterFlags
	cmd := &cobra.Command{
		Use:     "explain [-f] FILE|DIR|- ... | KIND/NAME [flags]",
		Short:   "Show what the webhook would decide for a Pod, and why",
		Example: explainExample,
		Long: `explain runs each Pod (or workload's Pod template) of the input through the
engine, as graft serve would be called for it, and shows whether its
namespace selects graft and with which profile, the decision and its
reason, the templates chosen, every template parameter with its value and
where it came from (default, profile or Pod annotation), the warnings, and
the patch, as YAML, with paths in the manifest's object. -o json gives one
JSON object per Pod, for machines.

With KIND/NAME (pod, deploy, sts, ds, rs, job, cronjob, as kubectl
spells them) instead of files, explain reads the object and its
Namespace from the cluster (--kubeconfig; -n, else the kubeconfig
context's namespace, as kubectl chooses) and explains the Pod, or the
Pod the workload would create now, with the namespace's labels, and a
patch with the object's paths (spec.template.spec... for a workload).
For a Pod it adds what graft audit says of it; for a workload, graft
audit's class of each of its Pods, naming those that differ from what
graft would inject now (stale, missing, conflict, spoofed). It judges
by the configuration graft's Deployment mounts, as graft audit does
(--config and --templates-dir name files instead), and says which on
stderr.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if kind, name, ok := live.ParseRef(args[0]); ok {
					return explainLive(cmd, &f, &cf, kind, name)
				}
			}
			run, err := f.open(cmd, args)
			if err != nil {
				return err
			}
			out, err := run.Explain(f.output == "json")
			run.Report().Flush(err)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f.register(cmd, "text", "json")
	cf.register(cmd)
	cf.registerGraft(cmd)
	return cmd
}

// workloadPodsChunk is how many Pods a LIST page of a workload's Pods
// holds, as graft audit's default --chunk-size.
const workloadPodsChunk = 500

// explainLive explains a Pod, or a workload's Pod template, read from the
// cluster with its Namespace: the webhook's decision for it as if created
// now, and for a Pod its audit class.
func explainLive(cmd *cobra.Command, f *offlineFlags, cf *clusterFlags, kind, name string) error {
	for _, fl := range []string{"profile", "revision", "namespace-labels", "filename"} {
		if cmd.Flags().Changed(fl) {
			return fmt.Errorf("explain %s/%s reads the namespace's labels from the cluster: --%s does not apply", strings.ToLower(kind), name, fl)
		}
	}
	if err := checkFormat(f.output, f.formats...); err != nil {
		return err
	}
	engine, source, err := fileEngine(f.config, f.templatesDir)
	if err != nil {
		return err
	}
	cluster, err := live.Connect(cf.config(f.namespace))
	if err != nil {
		return err
	}
	ctx := commandContext(cmd)
	if engine == nil {
		if engine, source, err = cf.liveEngine(ctx, cluster, "", ""); err != nil {
			return err
		}
	}
	if !f.quiet {
		fmt.Fprintln(cmd.ErrOrStderr(), "graft: configuration:", source)
	}
	ns, pod, err := cluster.ReadPod(ctx, kind, name)
	if err != nil {
		return err
	}
	obj := offline.LiveObject{Ref: strings.ToLower(kind) + "/" + name, Template: live.TemplatePointer(kind)}
	if kind != "Pod" {
		obj.Pods = func(each func(audit.Pod) error) error {
			return cluster.WorkloadPods(ctx, kind, name, workloadPodsChunk, each)
		}
	}
	out, err := offline.ExplainFromCluster(engine, ns, pod, obj)
	if err != nil {
		return err
	}
	out.Configuration = source
	var buf bytes.Buffer
	if err := offline.WriteExplanation(&buf, out, f.output == "json"); err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(buf.Bytes())
	return err
}
