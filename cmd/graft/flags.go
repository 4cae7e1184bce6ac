package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/live"
	"github.com/graftdev/graft/internal/manifest"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/offline"
)

// offlineFlags are shared by the subcommands that run the engine on
// manifests (inject, explain).
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

func (f *offlineFlags) register(cmd *cobra.Command, formats ...string) {
	f.formats = formats
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.files, names.FlagFilename, names.FlagFilenameShort, nil, "manifest file, directory of manifests, http(s) URL, or - for stdin (repeatable; also as arguments)")
	fl.BoolVarP(&f.recursive, names.FlagRecursive, names.FlagRecursiveShort, false, "read the directories' subdirectories too")
	fl.StringVar(&f.profile, "profile", "", "profile for namespaces whose labels are unknown, as if labelled graft.dev/inject=PROFILE (default: the configuration's default profile)")
	fl.StringVar(&f.revision, "revision", "", "revision or tag for namespaces whose labels are unknown, as if labelled graft.dev/rev=REVISION (default: defaultRevision)")
	fl.StringVar(&f.config, names.FlagConfig, "", "engine configuration file (YAML), as given to graft serve")
	fl.StringVar(&f.templatesDir, names.FlagTemplatesDir, "", "directory of templates overlaying the built-in ones")
	fl.StringVarP(&f.namespace, names.FlagNamespace, "n", "", `namespace for objects that name none (default "default"; for a live KIND/NAME, the kubeconfig context's)`)
	fl.StringVar(&f.namespaceLabels, names.FlagNamespaceLabels, "", "labels of the namespaces that have no Namespace object in the input: key=value,...")
	fl.StringVarP(&f.output, names.FlagOutput, names.FlagOutputShort, formats[0], "output format: "+strings.Join(formats, " or "))
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "say nothing on stderr but warnings and errors")
	_ = cmd.RegisterFlagCompletionFunc("profile", completeProfiles)
	_ = cmd.RegisterFlagCompletionFunc("revision", completeRevisions)
	registerFormats(cmd, formats...)
}

// open checks the flags and reads the input (the -f files, then the
// arguments) with the engine: what inject and explain both start from.
func (f *offlineFlags) open(cmd *cobra.Command, args []string) (*offline.Run, error) {
	if err := checkFormat(f.output, f.formats...); err != nil {
		return nil, err
	}
	o := offline.Options{
		Inputs:       append(f.files, args...),
		Recursive:    f.recursive,
		Profile:      f.profile,
		Revision:     f.revision,
		Config:       f.config,
		TemplatesDir: f.templatesDir,
		Namespace:    f.namespace,
		Quiet:        f.quiet,
		HTTP:         &http.Client{Timeout: manifest.URLTimeout},
	}
	if cmd.Flags().Changed(names.FlagNamespaceLabels) {
		var err error
		if o.NamespaceLabels, err = parseLabels(f.namespaceLabels); err != nil {
			return nil, err
		}
	}
	return offline.Open(o, cmd.InOrStdin(), cmd.ErrOrStderr())
}

// parseLabels reads --namespace-labels: k=v pairs separated by commas.
func parseLabels(s string) (map[string]string, error) {
	labels := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--namespace-labels %s: want key=value[,key=value...]", s)
		}
		labels[k] = v
	}
	return labels, nil
}

// checkFormat checks an -o value. -o is the format, as in kubectl; a
// value that looks like a file name gets a pointer to --output-file
// (istioctl kube-inject's -o names the output file).
func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	err := fmt.Errorf("-o %s: want one of %v", format, allowed)
	if strings.ContainsAny(format, "./\\") {
		err = fmt.Errorf("%w (-o is the output format, as in kubectl; to write a file, use --output-file %s)", err, format)
	}
	return err
}

// registerOutputFlags adds the flags of the commands that rewrite
// manifests (inject, uninject): where the result goes.
func registerOutputFlags(cmd *cobra.Command, outputFile *string, inPlace *bool) {
	cmd.Flags().StringVar(outputFile, "output-file", "", "write the output to this file (atomically) instead of stdout")
	cmd.Flags().BoolVar(inPlace, names.FlagInPlace, false, "rewrite each changed input file (atomically, all files or none)")
}

func checkInPlaceFlags(cmd *cobra.Command, inPlace bool, outputFile string) error {
	if inPlace && (outputFile != "" || cmd.Flags().Changed(names.FlagOutput)) {
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

// clusterFlags say how the live commands (audit, explain KIND/NAME) reach
// a cluster: a kubeconfig (--kubeconfig, else $KUBECONFIG, else
// ~/.kube/config), else the in-cluster ServiceAccount.
type clusterFlags struct {
	kubeconfig string
	context    string
	timeout    time.Duration
	graft      live.Install
}

func (f *clusterFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)")
	fl.StringVar(&f.context, "context", "", "kubeconfig context (default: the current one)")
	fl.DurationVar(&f.timeout, "request-timeout", 30*time.Second, "timeout of each request to the API server")
}

// registerGraft adds the flags that find graft's Deployment, for the
// commands that judge by its configuration (liveEngine).
func (f *clusterFlags) registerGraft(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.graft.Namespace, "graft-namespace", names.SystemNamespace, "namespace of graft's Deployment, whose mounted configuration is used without --config")
	fl.StringVar(&f.graft.Deployment, "graft-deployment", "", "graft's Deployment (default: the one labelled "+names.AppNameLabel+"="+names.AppName+" in --graft-namespace)")
}

// liveEngine is the engine the live commands judge Pods by, and what to
// call its configuration: with --config or --templates-dir those files
// (fileEngine), else what graft's Deployment in the cluster mounts, as
// graft serve runs it there.
func (f *clusterFlags) liveEngine(ctx context.Context, cluster *live.Cluster, configFile, templatesDir string) (*inject.Revisions, string, error) {
	if engine, source, err := fileEngine(configFile, templatesDir); engine != nil || err != nil {
		return engine, source, err
	}
	gc, err := cluster.GraftConfig(ctx, f.graft)
	if err != nil {
		return nil, "", fmt.Errorf("graft's configuration in the cluster (--config FILE to use a file instead): %w", err)
	}
	engine, err := offline.NewEngineFrom(gc.File, gc.TemplatesDir, gc.Templates, "", "")
	if err != nil {
		return nil, "", fmt.Errorf("graft's configuration in the cluster, %s: %w", gc.Source, err)
	}
	return engine, gc.Source, nil
}

// fileEngine is the engine of --config and --templates-dir, and what to
// call them; nil when neither is given. The live commands build it
// before reaching for a cluster, so a bad file is reported first.
func fileEngine(configFile, templatesDir string) (*inject.Revisions, string, error) {
	if configFile == "" && templatesDir == "" {
		return nil, "", nil
	}
	engine, err := offline.NewEngine(configFile, templatesDir, "", "")
	source := "built-in"
	if configFile != "" {
		source = "file " + configFile
	}
	if templatesDir != "" {
		source += " with the templates of " + templatesDir
	}
	return engine, source, err
}

// config is how to reach the cluster, working in namespace ("": the
// kubeconfig context's).
func (f *clusterFlags) config(namespace string) live.Config {
	return live.Config{Kubeconfig: f.kubeconfig, Context: f.context, Timeout: f.timeout, UserAgent: "graft/" + buildInfo().Version, Namespace: namespace}
}

// commandContext is the command's context, or the background one when
// cobra was run without one.
func commandContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// writeStructured writes v as indented JSON or as YAML (format json or
// yaml), each ending in a line break.
func writeStructured(w io.Writer, format string, v any) error {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	out := append(js, '\n')
	if format == "yaml" {
		if out, err = yaml.JSONToYAML(js); err != nil {
			return err
		}
	}
	_, err = w.Write(out)
	return err
}

// registerFormats completes -o with the command's formats.
func registerFormats(cmd *cobra.Command, formats ...string) {
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}
