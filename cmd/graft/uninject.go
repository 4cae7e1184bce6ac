package main

import (
	"net/http"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/internal/manifest"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/offline"
)

func newUninjectCmd() *cobra.Command {
	var (
		files      []string
		recursive  bool
		output     string
		quiet      bool
		outputFile string
		inPlace    bool
	)
	cmd := &cobra.Command{
		Use:     "uninject [-f] FILE|DIR|- ... [flags]",
		Short:   "Remove from manifests exactly what graft.dev/status says graft added",
		Example: uninjectExample,
		Long: `uninject reads Kubernetes manifests (multi-document YAML or JSON) and removes
from every Pod and Pod template exactly what its graft.dev/status record
says graft added: containers, init containers, volumes, pull secrets,
annotations, labels, the env vars and mounts of app containers, and the
record itself; also any mount of a volume it removes. Nothing else
changes, and the rest of the text stays as written. It needs no
configuration: the record says it all. A record it cannot read is an
error. uninject of inject's output gives back inject's input.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output, "yaml", "json"); err != nil {
				return err
			}
			if err := checkInPlaceFlags(cmd, inPlace, outputFile); err != nil {
				return err
			}
			in, err := manifest.ReadInputs(append(files, args...), recursive, manifest.Sources{Stdin: cmd.InOrStdin(), HTTP: &http.Client{Timeout: manifest.URLTimeout}})
			if err != nil {
				return err
			}
			if err := manifest.NoObjectsError(in); err != nil {
				return err
			}
			docs := manifest.AllDocuments(in)
			if inPlace {
				if err := manifest.CheckInPlace(in); err != nil {
					return err
				}
			}
			rep := offline.NewReport(cmd.ErrOrStderr(), quiet, docs)
			err = offline.Uninject(docs, rep, output != "json")
			if err == nil {
				err = writeManifests(cmd, in, output, outputFile, inPlace)
			}
			// What happened to each object is said once it is written.
			rep.Flush(err)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&files, names.FlagFilename, names.FlagFilenameShort, nil, "manifest file, directory of manifests, http(s) URL, or - for stdin (repeatable; also as arguments)")
	fl.BoolVarP(&recursive, names.FlagRecursive, names.FlagRecursiveShort, false, "read the directories' subdirectories too")
	fl.StringVarP(&output, names.FlagOutput, names.FlagOutputShort, "yaml", "output format: yaml or json")
	registerFormats(cmd, "yaml", "json")
	fl.BoolVarP(&quiet, "quiet", "q", false, "say nothing on stderr but warnings and errors")
	registerOutputFlags(cmd, &outputFile, &inPlace)
	return cmd
}
