package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/registration"
)

func newWebhooksCmd() *cobra.Command {
	var configFile string
	var o registration.Options
	cmd := &cobra.Command{
		Use:     "webhooks --config FILE",
		Short:   "Write the MutatingWebhookConfiguration a configuration needs",
		Example: webhooksExample,
		Long: `webhooks writes to stdout the MutatingWebhookConfiguration that registers
graft for the profiles, revisions and tags of a configuration file: for each
profile, one webhook for namespaces without a graft.dev/rev label (the
default revision) and one for each revision and tag, selected by the
namespace label graft.dev/rev. deploy/base/mutatingwebhookconfiguration.yaml
is its output for deploy/base/config.yaml (make deploy-webhooks). Apply it
after every change to the configuration's profiles, revisions or tags;
moving a tag needs no new registration.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configFile == "" {
				return errors.New("--config is required: the registration follows a configuration file")
			}
			f, err := config.Load(configFile)
			if err != nil {
				return err
			}
			o.Source = configFile
			out, err := registration.YAML(f, o)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&configFile, names.FlagConfig, "", "configuration file (YAML), as given to graft serve")
	fl.StringVar(&o.Service, "service", names.ServiceName, "name of graft's Service")
	fl.StringVarP(&o.Namespace, names.FlagNamespace, "n", names.SystemNamespace, "graft's namespace: its Service's, and never sent to graft")
	return cmd
}
