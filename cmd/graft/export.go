package main

import (
	"github.com/spf13/cobra"

	"github.com/graftdev/graft/export"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/offline"
)

func newExportCmd() *cobra.Command {
	var profile, configFile, templatesDir string
	cmd := &cobra.Command{
		Use:     "export [--profile P] [--config F] [--templates-dir D]",
		Short:   "Compile a profile into admission policies that inject without the webhook",
		Example: exportExample,
		Long: `export compiles a profile's templates into a MutatingAdmissionPolicy and its
binding (admissionregistration.k8s.io/v1, Kubernetes 1.36 or later), and a
ValidatingAdmissionPolicy and binding that refuse invalid graft.dev/<template>.<param>
annotations with graft's messages and Pods left without their sidecars. The
policies select the namespaces labelled for the profile, as the webhook does.

A template whose fragment the policies cannot reproduce exactly is refused,
with the template, the fragment line and the reason; then nothing is written.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, set, err := offline.LoadConfig(configFile, templatesDir)
			if err != nil {
				return err
			}
			if profile == "" {
				profile = cfg.DefaultProfile
				if profile == "" {
					profile = "enabled"
				}
			}
			if err := offline.CheckProfile(cfg, profile); err != nil {
				return err
			}
			pols, err := export.Export(cfg, set, profile)
			if err != nil {
				return err
			}
			out, err := pols.YAML()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&profile, "profile", "", "profile to export (default: the configuration's default profile)")
	fl.StringVar(&configFile, names.FlagConfig, "", "engine configuration file (YAML), as given to graft serve")
	fl.StringVar(&templatesDir, names.FlagTemplatesDir, "", "directory of templates overlaying the built-in ones")
	_ = cmd.RegisterFlagCompletionFunc("profile", completeProfiles)
	return cmd
}
