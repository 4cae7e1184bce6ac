package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/inject"
)

// offlineFlags are shared by the subcommands that run the engine offline.
type offlineFlags struct {
	files        []string
	profile      string
	revision     string
	config       string
	templatesDir string
	namespace    string
	output       string
	formats      []string // allowed -o values, the first the default
}

// open does what inject and explain both do first: check the output
// format, build the engine, read the input documents.
func (f *offlineFlags) open(cmd *cobra.Command) (*admitter, []*document, error) {
	if err := checkFormat(f.output, f.formats...); err != nil {
		return nil, nil, err
	}
	engine, err := newOfflineEngine(f.config, f.templatesDir, f.profile, f.revision)
	if err != nil {
		return nil, nil, err
	}
	docs, err := readDocuments(f.files, cmd.InOrStdin())
	if err != nil {
		return nil, nil, err
	}
	return &admitter{engine: engine, opts: inject.Options{Profile: f.profile, Revision: f.revision}, namespace: f.namespace}, docs, nil
}

func (f *offlineFlags) register(cmd *cobra.Command, formats ...string) {
	f.formats = formats
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.files, "filename", "f", nil, "manifest file, directory of manifests, or - for stdin (repeatable)")
	fl.StringVar(&f.profile, "profile", "", "profile to inject with (default: the configuration's default profile)")
	fl.StringVar(&f.revision, "revision", "", "revision or tag to inject with, as a namespace's graft.dev/rev label chooses (default: defaultRevision)")
	fl.StringVar(&f.config, "config", "", "engine configuration file (YAML), as given to graft serve")
	fl.StringVar(&f.templatesDir, "templates-dir", "", "directory of templates overlaying the built-in ones")
	fl.StringVarP(&f.namespace, "namespace", "n", "", `namespace for objects that name none (default "default")`)
	fl.StringVarP(&f.output, "output", "o", formats[0], "output format: "+strings.Join(formats, " or "))
	_ = cmd.MarkFlagRequired("filename")
}

func newInjectCmd() *cobra.Command {
	var f offlineFlags
	cmd := &cobra.Command{
		Use:   "inject -f FILE|DIR|- [flags]",
		Short: "Inject sidecars into the Pods and Pod templates of manifests, as the webhook would",
		Long: `inject reads Kubernetes manifests (multi-document YAML or JSON) and injects
into every Pod and into the Pod templates of Deployments, StatefulSets,
DaemonSets, ReplicaSets, ReplicationControllers, Jobs and CronJobs, with the
engine and configuration graft serve uses. Other objects pass through
unchanged, in order. Nothing is written unless every document succeeds.
Running inject on its own output changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, docs, err := f.open(cmd)
			if err != nil {
				return err
			}
			out, err := injectDocuments(a, docs, f.output, func(d *document, what, msg string) {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: document %d (%s): %s\n", d.source, d.index, what, msg)
			})
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f.register(cmd, "yaml", "json")
	return cmd
}

// injectDocuments injects into docs and renders them in format; nothing
// is rendered if any document fails.
func injectDocuments(a *admitter, docs []*document, format string, warn func(d *document, what, msg string)) ([]byte, error) {
	var errs []error
	for _, d := range docs {
		errs = append(errs, a.injectDocument(d, func(what, msg string) { warn(d, what, msg) })...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return encodeDocuments(docs, format)
}
