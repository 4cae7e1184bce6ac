package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/graftdev/graft/webhook/certgen"
)

func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == serveFixedArg {
		if err := serveFixedWebhook(os.Args[2]); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The minimal webhook's own process answers a review with its patch, and
// stops when told.
func TestFixedWebhookProcess(t *testing.T) {
	certs, err := certgen.Generate(certgen.Options{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	patch := []byte(`[{"op":"add","path":"/metadata/labels/x","value":"y"}]`)
	for name, data := range map[string][]byte{"tls.crt": certs.TLSCert, "tls.key": certs.TLSKey, "patch.json": patch} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr, stop, err := startFixed(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certs.CACert)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1"}}`)
	resp, err := client.Post("https://"+addr+"/mutate", "application/json", bytes.NewReader(review))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		APIVersion string `json:"apiVersion"`
		Response   struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
			Patch   string `json:"patch"`
		} `json:"response"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != "admission.k8s.io/v1" || got.Response.UID != "u-1" || !got.Response.Allowed || got.Response.Patch != base64.StdEncoding.EncodeToString(patch) {
		t.Errorf("answer %+v", got)
	}
	client.CloseIdleConnections()
	stop()
	if _, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr); err == nil {
		t.Errorf("%s still listening after stop", addr)
	}
}
