package main

import (
	"cmp"
	"errors"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/registration"
)

func newGuaranteeCmd() *cobra.Command {
	var configFile, templatesDir string
	var facts, skeleton bool
	var o registration.Options
	cmd := &cobra.Command{
		Use:     "guarantee --config FILE [--templates-dir DIR]",
		Short:   "Write the ValidatingAdmissionPolicies that guarantee what graft injects",
		Example: guaranteeExample,
		Long: `guarantee writes to stdout, per profile of a configuration file, the
ValidatingAdmissionPolicy and binding that refuse a Pod leaving admission
without the sidecars graft injects, or with containers under graft's names
that graft did not inject. The policies name the containers each profile's
templates can add and the images they may run, so they follow the
configuration and the templates: deploy/base/validatingadmissionpolicy.yaml
is its output for deploy/base (make deploy-webhooks). Apply it after every
change to the profiles, revisions, tags or templates.

--facts writes instead what the policies know of each template (the
containers it can add, their kinds and images), as the Helm chart reads
them: give the chart's policy.templateFacts the entries of templates of
your own.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out []byte
			var err error
			switch {
			case skeleton:
				out, err = registration.SkeletonYAML()
			case facts:
				set, err2 := config.Templates(templatesDir)
				if err2 != nil {
					return err2
				}
				out, err = registration.FactsJSON(set)
			}
			if skeleton || facts {
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(out)
				return err
			}
			if configFile == "" {
				return errors.New("--config is required: the policies follow a configuration file")
			}
			f, err := config.Load(configFile)
			if err != nil {
				return err
			}
			rc, err := f.RevisionsConfig(cmp.Or(templatesDir, f.Server.TemplatesDir))
			if err != nil {
				return err
			}
			o.Source = configFile
			out, err = registration.GuaranteeYAML(rc, o)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&configFile, "config", "", "configuration file (YAML), as given to graft serve")
	fl.StringVar(&templatesDir, "templates-dir", "", "directory of templates overlaying the built-in ones (default: the config file's server.templatesDir)")
	fl.StringVarP(&o.Namespace, "namespace", "n", "graft-system", "graft's namespace: never checked, and named in the messages")
	fl.StringVar(&o.Service, "service", "graft", "name of graft's Service, which starts the policies' names")
	fl.BoolVar(&facts, "facts", false, "write the facts of the templates (built-in, overlaid by --templates-dir) as JSON instead")
	fl.BoolVar(&skeleton, "cel-skeleton", false, "write the policies' CEL with markers for the Helm chart instead")
	_ = fl.MarkHidden("cel-skeleton")
	return cmd
}
