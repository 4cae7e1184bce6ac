package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/internal/bounded"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/probe"
)

type probeFlags struct {
	caFile    string
	namespace string
	timeout   time.Duration
}

func newProbeCmd() *cobra.Command {
	var f probeFlags
	cmd := &cobra.Command{
		Use:     "probe URL",
		Short:   "Send graft one AdmissionReview, as the API server would, and check the answer",
		Example: probeExample,
		Long: `probe sends one AdmissionReview (admission.k8s.io/v1, a dry-run CREATE of
a small Pod) to URL, over HTTP/1.1 as the API server does, and checks the
answer: status 200, the same apiVersion and kind, the request's uid,
allowed, and a JSON patch that applies to the Pod sent and leaves graft's
graft.dev/status on it. It verifies the server's certificate against
--ca-file (the CA the webhooks' caBundle holds) for the URL's host name,
so a certificate made for another Service or namespace fails too.
The Helm chart's test (helm test) runs it through graft's Service.
Exit codes: 0 graft answered as it should; 1 it did not, or could not be
reached.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProbe(cmd, args[0], &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.caFile, "ca-file", "", "PEM CA certificates to verify graft's certificate with (default: the system's)")
	fl.StringVarP(&f.namespace, names.FlagNamespace, "n", "graft-probe", "namespace of the Pod in the review (graft must not exclude it)")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Second, "how long to wait for the answer")
	return cmd
}

func runProbe(cmd *cobra.Command, url string, f *probeFlags) error {
	if !strings.HasPrefix(url, "https://") {
		return fmt.Errorf("%s: want an https:// URL, as the API server only calls webhooks over TLS", url)
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if f.caFile != "" {
		pem, err := bounded.ReadFile(f.caFile, 1<<20)
		if err != nil {
			return fmt.Errorf("--ca-file: %w", err)
		}
		tlsCfg.RootCAs = x509.NewCertPool()
		if !tlsCfg.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--ca-file %s: no PEM certificate", f.caFile)
		}
	}
	client := &http.Client{Timeout: f.timeout, Transport: &http.Transport{
		Proxy:           nil,
		TLSClientConfig: tlsCfg,
		// HTTP/1.1 only, as the API server calls webhooks.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}}
	defer client.CloseIdleConnections()
	r, err := probe.NewReview(f.namespace)
	if err != nil {
		return err
	}
	body, took, err := probe.Send(cmd.Context(), client, url, r)
	if err != nil {
		var unknown x509.UnknownAuthorityError
		var host x509.HostnameError
		switch {
		case errors.As(err, &unknown):
			return fmt.Errorf("%w (is --ca-file the CA of graft's serving certificate?)", err)
		case errors.As(err, &host):
			return fmt.Errorf("%w (graft's certificate must name the Service the webhooks call: <service>.<namespace>.svc)", err)
		}
		return err
	}
	res, err := probe.Check(r, body)
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "graft answered %s in %s: allowed, %d patch operations, templates %s\n",
		url, took.Round(100*time.Microsecond), res.Ops, strings.Join(res.Templates, ", "))
	return err
}
