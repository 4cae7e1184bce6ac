package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/internal/buildinfo"
	"github.com/graftdev/graft/internal/names"
)

// maxServerVersion bounds what `graft version --server` reads: /version
// answers a few lines.
const maxServerVersion = 4 << 10

// buildInfo is which graft this is.
func buildInfo() buildinfo.Info {
	return buildinfo.Read(buildinfo.Stamped{Version: version, Revision: revision, Time: buildTime})
}

func newVersionCmd() *cobra.Command {
	var server, output string
	var client bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print graft's version, commit and Go version, and a server's",
		Long: `version prints graft's version, the commit it was built from and when that
was committed, and the Go toolchain. A release build stamps them; any other
build (go install, go build in a checkout) reports what the Go toolchain
recorded. graft --version prints the same.

With --server, it also prints what a running graft serve answers on its
admin port's /version (plain HTTP, the port of --admin-addr, 8080 by
default; in a cluster, kubectl port-forward to it first). --client
prints this binary's version only, as kubectl version --client does.
-o json or yaml writes {clientVersion, serverVersion} for machines.`,
		Example: versionExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(output, "text", "json", "yaml"); err != nil {
				return err
			}
			if client && server != "" {
				return errors.New("give either --client or --server, not both")
			}
			v := versions{Client: buildInfo()}
			var text string
			if server != "" {
				var err error
				if text, err = serverVersion(commandContext(cmd), http.DefaultClient, server); err != nil {
					return err
				}
				theirs, err := buildinfo.Parse(text)
				if err != nil {
					return fmt.Errorf("--server %s: /version: %w", server, err)
				}
				v.Server = &theirs
			}
			out := cmd.OutOrStdout()
			switch {
			case output == "json" || output == "yaml":
				return writeStructured(out, output, v)
			case server == "":
				_, err := fmt.Fprint(out, v.Client)
				return err
			}
			_, err := fmt.Fprintf(out, "client: %sserver: %s", v.Client, text)
			return err
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "also print the version of the graft serving this admin address (http://host:port)")
	cmd.Flags().BoolVar(&client, "client", false, "print this binary's version only (the default without --server)")
	cmd.Flags().StringVarP(&output, names.FlagOutput, names.FlagOutputShort, "text", "output format: text, json or yaml")
	registerFormats(cmd, "text", "json", "yaml")
	return cmd
}

// versions is graft version's structured output, as kubectl version's.
type versions struct {
	Client buildinfo.Info  `json:"clientVersion"`
	Server *buildinfo.Info `json:"serverVersion,omitempty"`
}

// serverVersion reads base's /version within 10 s and maxServerVersion
// bytes.
func serverVersion(ctx context.Context, client *http.Client, base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--server %q: want graft's admin address as http://host:port", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/version"
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("--server %s: %w", base, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("--server %s: %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxServerVersion+1))
	if err != nil {
		return "", fmt.Errorf("--server %s: reading /version: %w", base, err)
	}
	switch {
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("--server %s: /version answered %s (a graft older than /version, or not graft's admin port?)", base, resp.Status)
	case len(body) > maxServerVersion:
		return "", errors.New("--server " + base + ": /version answered more than 4 KiB: not graft's admin port?")
	}
	v := string(body)
	if !strings.HasSuffix(v, "\n") {
		v += "\n"
	}
	return v, nil
}
