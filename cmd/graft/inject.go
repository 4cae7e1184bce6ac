package main

import (
	"cmp"
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/internal/manifest"
)

// offlineFlags are shared by the subcommands that run the engine offline.
type offlineFlags struct {
	files           []string
	recursive       bool
	profile         string
	revision        string
	config          string
	templatesDir    string
	namespace       string
	namespaceLabels string
	output          string
	quiet           bool
	formats         []string // allowed -o values, the first the default
}

// offlineRun is what inject and explain both start from.
type offlineRun struct {
	admitter *admitter
	files    []*manifest.File
	docs     []*manifest.Document
	report   *reporter
}

// open does what inject and explain both do first: check the flags,
// build the engine, read the input documents (the -f ones and then the
// arguments), and learn the namespaces' labels.
func (f *offlineFlags) open(cmd *cobra.Command, args []string) (*offlineRun, error) {
	if err := checkFormat(f.output, f.formats...); err != nil {
		return nil, err
	}
	sel := &selector{}
	if cmd.Flags().Changed("namespace-labels") {
		var err error
		if sel.flagLabels, err = parseLabels(f.namespaceLabels); err != nil {
			return nil, err
		}
	}
	engine, err := newOfflineEngine(f.config, f.templatesDir, f.profile, f.revision)
	if err != nil {
		return nil, err
	}
	files, err := manifest.ReadInputs(append(f.files, args...), f.recursive, cmd.InOrStdin())
	if err != nil {
		return nil, err
	}
	docs := manifest.AllDocuments(files)
	if !manifest.HasObjects(docs) {
		return nil, errors.New("no objects in the input")
	}
	sel.defaultProfile, sel.profiles = engine.DefaultProfile(), engine.Profiles()
	sel.assumed = cmp.Or(f.profile, sel.defaultProfile)
	sel.revision = f.revision
	sel.declareNamespaces(docs)
	return &offlineRun{
		admitter: &admitter{engine: engine, sel: sel, namespace: f.namespace},
		files:    files,
		docs:     docs,
		report:   newReporter(cmd.ErrOrStderr(), f.quiet, docs),
	}, nil
}

func (f *offlineFlags) register(cmd *cobra.Command, formats ...string) {
	f.formats = formats
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.files, "filename", "f", nil, "manifest file, directory of manifests, or - for stdin (repeatable; also as arguments)")
	fl.BoolVarP(&f.recursive, "recursive", "R", false, "read the directories' subdirectories too")
	fl.StringVar(&f.profile, "profile", "", "profile for namespaces whose labels are unknown, as if labelled graft.dev/inject=PROFILE (default: the configuration's default profile)")
	fl.StringVar(&f.revision, "revision", "", "revision or tag for namespaces whose labels are unknown, as if labelled graft.dev/rev=REVISION (default: defaultRevision)")
	fl.StringVar(&f.config, "config", "", "engine configuration file (YAML), as given to graft serve")
	fl.StringVar(&f.templatesDir, "templates-dir", "", "directory of templates overlaying the built-in ones")
	fl.StringVarP(&f.namespace, "namespace", "n", "", `namespace for objects that name none (default "default")`)
	fl.StringVar(&f.namespaceLabels, "namespace-labels", "", "labels of the namespaces that have no Namespace object in the input: key=value,...")
	fl.StringVarP(&f.output, "output", "o", formats[0], "output format: "+strings.Join(formats, " or "))
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "say nothing on stderr but warnings and errors")
}

func newInjectCmd() *cobra.Command {
	var (
		f          offlineFlags
		outputFile string
		inPlace    bool
	)
	cmd := &cobra.Command{
		Use:   "inject [-f] FILE|DIR|- ... [flags]",
		Short: "Inject sidecars into the Pods and Pod templates of manifests, as the webhook would",
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
				if err := manifest.CheckInPlace(run.files); err != nil {
					return err
				}
			}
			run.admitter.jsonOut = f.output == "json"
			if err := injectDocuments(run.admitter, run.docs, run.report); err != nil {
				return err
			}
			return writeManifests(cmd, run.files, f.output, outputFile, inPlace)
		},
	}
	f.register(cmd, "yaml", "json")
	registerOutputFlags(cmd, &outputFile, &inPlace)
	return cmd
}

func registerOutputFlags(cmd *cobra.Command, outputFile *string, inPlace *bool) {
	cmd.Flags().StringVar(outputFile, "output-file", "", "write the output to this file (atomically) instead of stdout")
	cmd.Flags().BoolVar(inPlace, "in-place", false, "rewrite each changed input file (atomically, all files or none)")
}

func checkInPlaceFlags(cmd *cobra.Command, inPlace bool, outputFile string) error {
	if inPlace && (outputFile != "" || cmd.Flags().Changed("output")) {
		return errors.New("--in-place writes each file in its own format: give neither --output-file nor -o with it")
	}
	return nil
}

// writeManifests writes the rewritten manifests: in place, to
// --output-file, or to stdout.
func writeManifests(cmd *cobra.Command, files []*manifest.File, format, outputFile string, inPlace bool) error {
	if inPlace {
		return manifest.WriteInPlace(files)
	}
	out, err := manifest.Encode(files, format)
	if err != nil {
		return err
	}
	if outputFile != "" && outputFile != "-" {
		return manifest.WriteFile(outputFile, out)
	}
	_, err = cmd.OutOrStdout().Write(out)
	return err
}
