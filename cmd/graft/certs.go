package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/graftdev/graft/internal/bounded"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/webhook/certgen"
)

// maxTrustFile bounds what --trust reads: a CA bundle is a few KiB.
const maxTrustFile = 1 << 20

type certsFlags struct {
	service   string
	namespace string
	out       string
	days      int
	dnsNames  []string
	ips       []net.IP
	kustomize bool
	trust     []string
}

func newCertsCmd() *cobra.Command {
	var f certsFlags
	cmd := &cobra.Command{
		Use:     "certs",
		Short:   "Write a CA and a serving certificate for graft's Service",
		Example: certsExample,
		Long: `certs issues a private CA and a serving certificate it signs (ECDSA P-256)
for the Service's DNS names, and writes ca.crt, tls.crt and tls.key into --out.

With --kustomize it also writes secret.yaml (the kubernetes.io/tls Secret graft
serves with) and cabundle.yaml (the CA bundle for the webhooks), which
deploy/overlays/self-signed consumes:

  graft certs --out deploy/overlays/self-signed/certs --kustomize

The CA's key is not kept: to rotate, run certs again, with --trust pointing at
the previous ca.crt so the API server trusts both while replicas reload.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCerts(cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.service, "service", names.ServiceName, "name of graft's Service")
	fl.StringVarP(&f.namespace, names.FlagNamespace, "n", names.SystemNamespace, "namespace of graft's Service")
	fl.StringVar(&f.out, "out", "", "directory to write the files into (created if missing)")
	fl.IntVar(&f.days, "days", 365, "validity of both certificates, in days (1-3650)")
	fl.StringSliceVar(&f.dnsNames, "dns", nil, "extra DNS names for the serving certificate")
	fl.IPSliceVar(&f.ips, "ip", nil, "IP addresses for the serving certificate (e.g. 127.0.0.1 for a local API server)")
	fl.BoolVar(&f.kustomize, names.FlagKustomize, false, "also write secret.yaml and cabundle.yaml for deploy/overlays/self-signed")
	fl.StringArrayVar(&f.trust, "trust", nil, "PEM file of CA certificates to keep in the CA bundle besides the new CA (with --kustomize)")
	return cmd
}

func runCerts(stdout io.Writer, f certsFlags) error {
	if f.out == "" {
		return errors.New("certs: --out is required")
	}
	for flag, v := range map[string]string{"--service": f.service, "--namespace": f.namespace} {
		if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
			return fmt.Errorf("certs: %s %q: %s", flag, v, strings.Join(errs, "; "))
		}
	}
	if f.days < 1 || f.days > 3650 {
		return fmt.Errorf("certs: --days %d: want 1 to 3650", f.days)
	}
	if len(f.trust) > 0 && !f.kustomize {
		return errors.New("certs: --trust only applies to the CA bundle written with --kustomize")
	}
	var extra []byte
	for _, path := range f.trust {
		b, err := bounded.ReadFile(path, maxTrustFile)
		if err != nil {
			return fmt.Errorf("certs: --trust: %w", err)
		}
		extra = append(extra, b...)
	}
	bundle, err := certgen.Generate(certgen.Options{
		DNSNames: append(certgen.ServiceDNSNames(f.service, f.namespace), f.dnsNames...),
		IPs:      f.ips,
		Validity: time.Duration(f.days) * 24 * time.Hour,
	})
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if f.kustomize {
		err = bundle.WriteKustomize(f.out, certgen.KustomizeOptions{Namespace: f.namespace, ExtraCAs: extra})
	} else {
		err = bundle.Write(f.out)
	}
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	files := []string{certgen.CAFile, certgen.CertFile, certgen.KeyFile}
	if f.kustomize {
		files = append(files, certgen.SecretFile, certgen.CABundleFile)
	}
	for _, name := range files {
		if _, err := fmt.Fprintln(stdout, "wrote", filepath.Join(f.out, name)); err != nil {
			return err
		}
	}
	notAfter, err := bundle.NotAfter()
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "valid for %d days, until %s\n", f.days, notAfter.UTC().Format(time.RFC3339))
	return err
}
