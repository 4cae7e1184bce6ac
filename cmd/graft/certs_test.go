package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// graftCerts runs `graft certs args...` and fails the test on error.
func graftCerts(t *testing.T, args ...string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"certs"}, args...), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("graft certs %v: exit %d: %s", args, code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "wrote ") {
		t.Errorf("graft certs %v printed %q, want the files it wrote", args, stdout.String())
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseCert(t *testing.T, pemBytes []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("not a PEM certificate: %q", pemBytes)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pool(t *testing.T, pemBytes []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pemBytes) {
		t.Fatal("no certificate in the CA bundle")
	}
	return p
}

func TestCertsVerifyForEachSAN(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		names []string // each must verify
		days  int
	}{
		{
			name:  "defaults",
			names: []string{"graft", "graft.graft-system", "graft.graft-system.svc", "graft.graft-system.svc.cluster.local"},
			days:  365,
		},
		{
			name:  "other service, extra names, loopback IPs",
			args:  []string{"--service", "inj", "--namespace", "platform", "--dns", "inj.example.internal", "--ip", "127.0.0.1", "--ip", "::1", "--days", "30"},
			names: []string{"inj.platform.svc", "inj.platform.svc.cluster.local", "inj.example.internal", "127.0.0.1", "::1"},
			days:  30,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "certs")
			graftCerts(t, append([]string{"--out", dir}, tc.args...)...)
			roots := pool(t, readFile(t, filepath.Join(dir, "ca.crt")))
			leaf := parseCert(t, readFile(t, filepath.Join(dir, "tls.crt")))
			for _, n := range tc.names {
				if _, err := leaf.Verify(x509.VerifyOptions{DNSName: n, Roots: roots}); err != nil {
					t.Errorf("verify %s: %v", n, err)
				}
			}
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "graft.other.svc", Roots: roots}); err == nil {
				t.Error("verified for a name the certificate does not carry")
			}
			if got := leaf.NotAfter.Sub(leaf.NotBefore); got != time.Duration(tc.days)*24*time.Hour {
				t.Errorf("validity %v, want %d days", got, tc.days)
			}
			for what, pub := range map[string]any{"serving": leaf.PublicKey, "CA": parseCert(t, readFile(t, filepath.Join(dir, "ca.crt"))).PublicKey} {
				if k, ok := pub.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
					t.Errorf("%s key is %T, want ECDSA P-256", what, pub)
				}
			}
			if st, err := os.Stat(filepath.Join(dir, "tls.key")); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("tls.key mode: %v %v, want 0600", st.Mode(), err)
			}
		})
	}
}

// TestCertsTLSHandshake serves the written certificate over loopback and
// connects as the API server would: trusting only ca.crt.
func TestCertsTLSHandshake(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	graftCerts(t, "--out", dir, "--ip", "127.0.0.1")
	other := filepath.Join(t.TempDir(), "other")
	graftCerts(t, "--out", other)

	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // listener closed
			}
			// Handshake (it may fail: some clients reject us), answer, close.
			if c.(*tls.Conn).Handshake() == nil {
				_, _ = io.WriteString(c, "ok")
			}
			_ = c.Close()
		}
	})
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })

	for _, tc := range []struct {
		serverName string
		ca         string
		ok         bool
	}{
		{"graft.graft-system.svc", dir, true},
		{"graft.graft-system.svc.cluster.local", dir, true},
		{"127.0.0.1", dir, true},
		{"graft.elsewhere.svc", dir, false},
		{"graft.graft-system.svc", other, false}, // another run's CA
	} {
		t.Run(tc.serverName+"/"+filepath.Base(tc.ca), func(t *testing.T) {
			conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{
				ServerName: tc.serverName,
				RootCAs:    pool(t, readFile(t, filepath.Join(tc.ca, "ca.crt"))),
			})
			if !tc.ok {
				if err == nil {
					_ = conn.Close()
					t.Fatal("handshake succeeded, want a verification failure")
				}
				return
			}
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			defer conn.Close()
			got, err := io.ReadAll(conn)
			if err != nil || string(got) != "ok" {
				t.Fatalf("read %q, %v", got, err)
			}
		})
	}
}

// TestCertsKustomizeFeedsSelfSignedOverlay writes --kustomize output into a
// copy of deploy/ and builds the self-signed overlay from it.
func TestCertsKustomizeFeedsSelfSignedOverlay(t *testing.T) {
	root := filepath.Join(t.TempDir(), "deploy")
	if err := os.CopyFS(root, os.DirFS("../../deploy")); err != nil {
		t.Fatal(err)
	}
	certs := filepath.Join(root, "overlays", "self-signed", "certs")
	if err := os.RemoveAll(certs); err != nil {
		t.Fatal(err)
	}
	graftCerts(t, "--out", certs, "--kustomize")
	ca := readFile(t, filepath.Join(certs, "ca.crt"))

	var secret corev1.Secret
	if err := yaml.UnmarshalStrict(readFile(t, filepath.Join(certs, "secret.yaml")), &secret); err != nil {
		t.Fatalf("secret.yaml: %v", err)
	}
	if secret.Kind != "Secret" || secret.Type != corev1.SecretTypeTLS || secret.Name != "graft-tls" || secret.Namespace != "graft-system" {
		t.Errorf("secret.yaml: %s %s/%s of type %s, want Secret graft-system/graft-tls of type kubernetes.io/tls",
			secret.Kind, secret.Namespace, secret.Name, secret.Type)
	}
	if !bytes.Equal(secret.Data["tls.crt"], readFile(t, filepath.Join(certs, "tls.crt"))) ||
		!bytes.Equal(secret.Data["tls.key"], readFile(t, filepath.Join(certs, "tls.key"))) {
		t.Error("secret.yaml does not hold the written tls.crt and tls.key")
	}
	if st, err := os.Stat(filepath.Join(certs, "secret.yaml")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("secret.yaml holds a key; mode %v %v, want 0600", st.Mode(), err)
	}

	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "overlays", "self-signed"))
	if err != nil {
		t.Fatalf("kustomize build of the self-signed overlay: %v", err)
	}
	var webhooks, secrets int
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		switch r.GetKind() {
		case "MutatingWebhookConfiguration":
			var mwc admissionv1.MutatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(y, &mwc); err != nil {
				t.Fatal(err)
			}
			for _, w := range mwc.Webhooks {
				webhooks++
				if !bytes.Equal(w.ClientConfig.CABundle, ca) {
					t.Errorf("%s: caBundle is not ca.crt", w.Name)
				}
			}
		case "Secret":
			secrets++
		case "ConfigMap":
			if r.GetName() == "graft-ca-bundle" {
				t.Error("the CA bundle's local-config ConfigMap reached the output")
			}
		}
	}
	if webhooks < 2 || secrets != 1 {
		t.Errorf("output has %d webhooks and %d Secrets, want every profile's webhook and the TLS Secret", webhooks, secrets)
	}
}

// TestCertsRotationKeepsOldCA: with --trust, the bundle trusts the new and
// the previous CA, so replicas still serving the old certificate keep
// working while they reload.
func TestCertsRotationKeepsOldCA(t *testing.T) {
	// In place, as the README says: the old ca.crt is read before the new
	// files replace it.
	dir := filepath.Join(t.TempDir(), "certs")
	graftCerts(t, "--out", dir, "--kustomize")
	oldCert := readFile(t, filepath.Join(dir, "tls.crt"))
	oldCA := filepath.Join(dir, "ca.crt")
	graftCerts(t, "--out", dir, "--kustomize", "--trust", oldCA, "--trust", oldCA)

	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(readFile(t, filepath.Join(dir, "cabundle.yaml")), &cm); err != nil {
		t.Fatal(err)
	}
	bundle, err := decodeBase64(cm.Data["caBundle"])
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(bundle, []byte("BEGIN CERTIFICATE")); n != 2 {
		t.Errorf("bundle holds %d certificates, want 2 (new and old, the duplicate dropped)", n)
	}
	newCert := readFile(t, filepath.Join(dir, "tls.crt"))
	if bytes.Equal(oldCert, newCert) {
		t.Fatal("the serving certificate was not replaced")
	}
	roots := pool(t, bundle)
	for name, c := range map[string][]byte{"old": oldCert, "new": newCert} {
		if _, err := parseCert(t, c).Verify(x509.VerifyOptions{DNSName: "graft.graft-system.svc", Roots: roots}); err != nil {
			t.Errorf("%s serving certificate: %v", name, err)
		}
	}
	if newCA := readFile(t, filepath.Join(dir, "ca.crt")); !bytes.HasPrefix(bundle, newCA) {
		t.Error("the new CA is not first in the bundle")
	}
}

func TestCertsRejectsBadInput(t *testing.T) {
	tmp := t.TempDir()
	notPEM := filepath.Join(tmp, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	leafDir := filepath.Join(tmp, "leaf")
	graftCerts(t, "--out", leafDir)
	leaf := filepath.Join(leafDir, "tls.crt")
	big := filepath.Join(tmp, "big.pem")
	if err := os.WriteFile(big, bytes.Repeat([]byte("a"), maxTrustFile+1), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no --out", nil, "--out is required"},
		{"zero days", []string{"--days", "0"}, "--days 0"},
		{"too many days", []string{"--days", "3651"}, "--days 3651"},
		{"empty service", []string{"--service", ""}, `--service ""`},
		{"service not a DNS label", []string{"--service", "Graft_1"}, `--service "Graft_1": a lowercase RFC 1123 label`},
		{"namespace not a DNS label", []string{"--namespace", "a.b"}, `--namespace "a.b"`},
		{"trust without kustomize", []string{"--trust", leaf}, "only applies"},
		{"missing trust file", []string{"--kustomize", "--trust", filepath.Join(tmp, "nope")}, "no such file"},
		{"trust file not PEM", []string{"--kustomize", "--trust", notPEM}, "not PEM"},
		{"trust file not a CA", []string{"--kustomize", "--trust", leaf}, "not a CA"},
		{"trust file too big", []string{"--kustomize", "--trust", big}, "too large (over 1048576 bytes)"},
		{"bad IP", []string{"--ip", "not-an-ip"}, "invalid argument"},
		{"positional argument", []string{"extra"}, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"certs"}, tc.args...)
			if tc.name != "no --out" {
				args = append(args, "--out", out)
			}
			var stdout, stderr bytes.Buffer
			if code := run(args, strings.NewReader(""), &stdout, &stderr); code == 0 {
				t.Fatalf("exit 0, want an error containing %q", tc.want)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("files were written despite the error (%v)", err)
			}
		})
	}
}

func decodeBase64(s string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(s)
}
