package main

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/registration"
)

func newGuaranteeCmd() *cobra.Command {
	var configFile, templatesDir string
	var checks, tpl bool
	var o registration.Options
	cmd := &cobra.Command{
		Use:     "guarantee --config FILE [--templates-dir DIR]",
		Short:   "Write the ValidatingAdmissionPolicies that guarantee what graft injects",
		Example: guaranteeExample,
		Long: `guarantee writes to stdout, per profile of a configuration file, the
ValidatingAdmissionPolicies and bindings that refuse a Pod leaving
admission (CREATE, UPDATE, ephemeral containers) without the sidecars graft
renders for it, or with a container under the name of any template's
sidecar that is not graft's render: every compared field (image, command,
args, env, ports, mounts and the volumes they name, securityContext,
probes, ...) must be what the template renders for the Pod's parameters.
The policies carry each template's render, so they follow the
configuration and the templates: deploy/base/validatingadmissionpolicy.yaml
is its output for deploy/base (make deploy-webhooks). Apply it after every
change to the profiles, revisions, tags or templates.

A template graft cannot compile into CEL is checked only in what all its
renders share; guarantee names each such template on stderr, and the
policy in its guarantee.graft.dev/unchecked annotation.

--checks writes instead what the policies compare of each template, as
the Helm chart reads it: give the chart's policy.templateChecks the
entries of templates of your own.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out []byte
			var err error
			switch {
			case tpl:
				out = []byte(registration.GuaranteeTemplate())
			case checks:
				set, err2 := config.Templates(templatesDir)
				if err2 != nil {
					return err2
				}
				out, err = registration.ChecksJSON(set)
			}
			if tpl || checks {
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
			refusals, err := registration.Refusals(rc)
			if err != nil {
				return err
			}
			for _, r := range refusals {
				fmt.Fprintln(cmd.ErrOrStderr(), "graft guarantee: "+r)
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&configFile, names.FlagConfig, "", "configuration file (YAML), as given to graft serve")
	fl.StringVar(&templatesDir, names.FlagTemplatesDir, "", "directory of templates overlaying the built-in ones (default: the config file's server.templatesDir)")
	fl.StringVarP(&o.Namespace, names.FlagNamespace, "n", names.SystemNamespace, "graft's namespace: never checked, and named in the messages")
	fl.StringVar(&o.Service, "service", names.ServiceName, "name of graft's Service, which starts the policies' names")
	fl.BoolVar(&checks, "checks", false, "write what the policies compare of each template (built-in, overlaid by --templates-dir) as JSON instead")
	fl.BoolVar(&tpl, "chart-template", false, "write the policies' assembly, the Helm chart's templates/_guarantee.tpl, instead")
	_ = fl.MarkHidden("chart-template")
	return cmd
}
