package certgen

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/internal/names"
)

// Files written by WriteKustomize, read by deploy/overlays/self-signed.
const (
	SecretFile   = "secret.yaml"
	CABundleFile = "cabundle.yaml"
)

// Object names the self-signed overlay expects.
const (
	SecretName   = "graft-tls"
	CABundleName = "graft-ca-bundle"
)

// KustomizeOptions say where the manifests go.
type KustomizeOptions struct {
	// Namespace of the Secret (graft's namespace).
	Namespace string
	// ExtraCAs are PEM certificates the API server keeps trusting besides
	// the new CA: the previous ca.crt during a rotation.
	ExtraCAs []byte
}

type object struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   objectMeta        `json:"metadata"`
	Type       string            `json:"type,omitempty"`
	Data       map[string]string `json:"data"`
}

type objectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// CABundle returns the PEM certificates the API server should trust: the
// bundle's CA followed by each distinct certificate of extra.
func (b *Bundle) CABundle(extra []byte) ([]byte, error) {
	out := bytes.Clone(b.CACert)
	seen := map[string]bool{string(pemBody(b.CACert)): true}
	for rest := extra; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				return nil, errors.New("certgen: extra CAs: data that is not PEM")
			}
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("certgen: extra CAs: a %q block, want CERTIFICATE", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certgen: extra CAs: %w", err)
		}
		if !c.IsCA {
			return nil, fmt.Errorf("certgen: extra CAs: %q is not a CA certificate", c.Subject.CommonName)
		}
		if seen[string(block.Bytes)] {
			continue
		}
		seen[string(block.Bytes)] = true
		out = append(out, pem.EncodeToMemory(block)...)
	}
	return out, nil
}

// NotAfter is when the serving certificate expires.
func (b *Bundle) NotAfter() (time.Time, error) {
	c, err := x509.ParseCertificate(pemBody(b.TLSCert))
	if err != nil {
		return time.Time{}, fmt.Errorf("certgen: serving certificate: %w", err)
	}
	return c.NotAfter, nil
}

func pemBody(p []byte) []byte {
	block, _ := pem.Decode(p)
	if block == nil {
		return nil
	}
	return block.Bytes
}

// Manifests returns the Secret (type kubernetes.io/tls) graft serves with
// and the local-config ConfigMap whose caBundle the self-signed overlay
// copies into every webhook.
func (b *Bundle) Manifests(o KustomizeOptions) (secret, caBundle []byte, err error) {
	if o.Namespace == "" {
		return nil, nil, errors.New("certgen: a namespace is required")
	}
	ca, err := b.CABundle(o.ExtraCAs)
	if err != nil {
		return nil, nil, err
	}
	labels := map[string]string{names.AppNameLabel: names.AppName}
	enc := base64.StdEncoding.EncodeToString
	secret, err = manifest("# graft's serving certificate and key, written by `graft certs`.\n# It holds a private key: keep it out of version control.\n", object{
		APIVersion: "v1",
		Kind:       "Secret",
		Metadata:   objectMeta{Name: SecretName, Namespace: o.Namespace, Labels: labels},
		Type:       "kubernetes.io/tls",
		Data:       map[string]string{"tls.crt": enc(b.TLSCert), "tls.key": enc(b.TLSKey)},
	})
	if err != nil {
		return nil, nil, err
	}
	caBundle, err = manifest("# The CA bundle for the webhooks' clientConfig.caBundle, written by `graft certs`.\n# kustomize copies it into every webhook and leaves this object out of its output.\n", object{
		APIVersion: "v1",
		Kind:       "ConfigMap",
		Metadata: objectMeta{
			Name:        CABundleName,
			Annotations: map[string]string{"config.kubernetes.io/local-config": "true"},
		},
		Data: map[string]string{"caBundle": enc(ca)},
	})
	if err != nil {
		return nil, nil, err
	}
	return secret, caBundle, nil
}

func manifest(header string, o object) ([]byte, error) {
	y, err := yaml.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("certgen: %w", err)
	}
	return append([]byte(header), y...), nil
}

// WriteKustomize writes the bundle's files (as Write does) and its
// manifests, secret.yaml and cabundle.yaml, into dir.
func (b *Bundle) WriteKustomize(dir string, o KustomizeOptions) error {
	secret, caBundle, err := b.Manifests(o)
	if err != nil {
		return err
	}
	if err := b.Write(dir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, SecretFile), secret, 0o600); err != nil {
		return fmt.Errorf("certgen: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, CABundleFile), caBundle, 0o644); err != nil {
		return fmt.Errorf("certgen: %w", err)
	}
	return nil
}
