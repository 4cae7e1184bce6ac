package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/templates"
)

func newTemplatesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "templates",
		Short:   "List, check and document sidecar templates",
		Example: templatesExample,
		Args:    cobra.NoArgs,
		// Runnable only so that a missing or unknown subcommand is an error.
		RunE: func(*cobra.Command, []string) error {
			return errors.New("templates: missing subcommand: list, lint or docs")
		},
	}
	cmd.AddCommand(newTemplatesListCmd(), newTemplatesLintCmd(), newTemplatesDocsCmd())
	return cmd
}

func newTemplatesLintCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "lint DIR",
		Short:   "Render every template under DIR at its parameter bounds and check the result against Kubernetes rules",
		Example: templatesLintExample,
		Long: "lint parses every *.yaml template in DIR and its subdirectories (each directory\n" +
			"one template set; testdata skipped), renders each with its defaults and with\n" +
			"every parameter at its bounds, and checks what it renders against the rules the\n" +
			"Kubernetes API server applies to a Pod. It prints one `file: template: problem`\n" +
			"line per problem and exits non-zero if there is any.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if fi, err := os.Stat(dir); err != nil {
				return fmt.Errorf("templates lint: %w", err)
			} else if !fi.IsDir() {
				return fmt.Errorf("templates lint: %s is not a directory", dir)
			}
			problems, err := templates.Lint(os.DirFS(dir))
			if err != nil {
				return fmt.Errorf("templates lint %s: %w", dir, err)
			}
			out := cmd.OutOrStdout()
			for _, p := range problems {
				if _, err := fmt.Fprintln(out, filepath.Join(dir, p.File)+": "+p.Template+": "+p.Message); err != nil {
					return err
				}
			}
			if len(problems) > 0 {
				return fmt.Errorf("templates lint: %d problem(s) in %s", len(problems), dir)
			}
			_, err = fmt.Fprintf(out, "%s: no problems\n", dir)
			return err
		},
	}
}

func newTemplatesDocsCmd() *cobra.Command {
	var out, dir string
	var check bool
	cmd := &cobra.Command{
		Use:     "docs",
		Short:   "Write the Markdown reference of the templates and their parameters",
		Example: templatesDocsExample,
		Long: "docs writes, for each template, what it injects and a table of its parameters\n" +
			"with the annotation that sets each one. It documents the built-in templates, or\n" +
			"those in --dir, to standard output, or with -o to a file (replaced atomically);\n" +
			"with --check it writes nothing and reports whether the -o file is current.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := templates.Builtin()
			if dir != "" {
				set, err = templates.LoadDir(dir)
			}
			if err != nil {
				return fmt.Errorf("templates docs: %w", err)
			}
			doc, err := templates.Docs(set)
			if err != nil {
				return fmt.Errorf("templates docs: %w", err)
			}
			switch {
			case check && (out == "" || out == "-"):
				return errors.New("templates docs: --check compares a file: name it with -o FILE")
			case out == "" || out == "-":
				_, err := cmd.OutOrStdout().Write(doc)
				return err
			case check:
				have, err := os.ReadFile(out)
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("templates docs: %w", err)
				}
				if !bytes.Equal(have, doc) {
					return fmt.Errorf("templates docs: %s is stale: run `graft templates docs -o %s`", out, out)
				}
				return nil
			}
			return writeDocFile(out, doc)
		},
	}
	// Standard output by default: a path relative to wherever graft runs
	// would write a templates/ directory into any working directory.
	cmd.Flags().StringVarP(&out, "out", "o", "", "file to write (default: standard output)")
	cmd.Flags().StringVar(&dir, "dir", "", "document the templates in this directory instead of the built-in ones")
	cmd.Flags().BoolVar(&check, "check", false, "exit non-zero if the -o file differs from what would be written, and write nothing")
	return cmd
}

// writeDocFile writes data to a temporary file next to name and renames
// it into place, so a failure never leaves name half-written.
func writeDocFile(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this finds nothing
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
