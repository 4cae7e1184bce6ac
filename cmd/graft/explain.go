package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

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
context's namespace, as kubectl chooses) and explains the Pod, or
the Pod the workload would create now, with the namespace's labels; for
a Pod it adds what graft audit says of it.`,
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
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f.register(cmd, "text", "json")
	cf.register(cmd)
	return cmd
}

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
	engine, err := offline.NewEngine(f.config, f.templatesDir, "", "")
	if err != nil {
		return err
	}
	cluster, err := live.Connect(cf.config(f.namespace))
	if err != nil {
		return err
	}
	ns, pod, err := cluster.ReadPod(commandContext(cmd), kind, name)
	if err != nil {
		return err
	}
	out, err := offline.ExplainFromCluster(engine, ns, pod, strings.ToLower(kind)+"/"+name, kind == "Pod")
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := offline.WriteExplanation(&buf, out, f.output == "json"); err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(buf.Bytes())
	return err
}
