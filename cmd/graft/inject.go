package main

import (
	"github.com/spf13/cobra"

	"github.com/graftdev/graft/internal/manifest"
)

func newInjectCmd() *cobra.Command {
	var (
		f          offlineFlags
		outputFile string
		inPlace    bool
	)
	cmd := &cobra.Command{
		Use:     "inject [-f] FILE|DIR|- ... [flags]",
		Short:   "Inject sidecars into the Pods and Pod templates of manifests, as the webhook would",
		Example: injectExample,
		Long: `inject reads Kubernetes manifests (multi-document YAML or JSON) and injects
into every Pod and into the Pod templates of Deployments, StatefulSets,
DaemonSets, ReplicaSets, ReplicationControllers, Jobs, CronJobs, OpenShift
DeploymentConfigs and Argo Rollouts, with the engine and configuration
graft serve uses, in the namespaces the webhook would select. What graft
adds is written into the manifest's own text; everything else stays as it
was. Other objects pass through unchanged, in order. A line per object on
stderr says what happened. Nothing is written unless every document
succeeds. Running inject on its own output changes nothing.

-o is the output format (yaml or json), as in kubectl; istioctl
kube-inject's -o FILE is --output-file FILE here.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkInPlaceFlags(cmd, inPlace, outputFile); err != nil {
				return err
			}
			run, err := f.open(cmd, args)
			if err != nil {
				return err
			}
			if inPlace {
				if err := manifest.CheckInPlace(run.Files()); err != nil {
					return err
				}
			}
			err = run.Inject(f.output == "json")
			if err == nil {
				err = writeManifests(cmd, run.Files(), f.output, outputFile, inPlace)
			}
			// What happened to each object is said once it is written.
			run.Report().Flush(err)
			return err
		},
	}
	f.register(cmd, "yaml", "json")
	registerOutputFlags(cmd, &outputFile, &inPlace)
	return cmd
}
