package webhook

import (
	"crypto/tls"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/webhook/certgen"
)

// TestMTLS: with a client CA, only clients presenting a certificate it
// signed get through.
func TestMTLS(t *testing.T) {
	apiserverCA := newPKI(t, "apiserver-client-ca")
	otherCA := newPKI(t, "someone-else")
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(caFile, apiserverCA.pem, 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, serverSetup{override: func(s *config.Server) { s.ClientCA = caFile }})
	cases := []struct {
		name   string
		cert   *tls.Certificate
		wantOK bool
	}{
		{"no client certificate", nil, false},
		{"certificate from another CA", otherCA.clientCert(t, "kube-apiserver"), false},
		{"certificate from the client CA", apiserverCA.clientCert(t, "kube-apiserver"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(ts.caPool, tc.cert)
			defer c.CloseIdleConnections()
			resp, err := c.Get(ts.url + "/healthz")
			if tc.wantOK {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d", resp.StatusCode)
				}
				return
			}
			if err == nil {
				resp.Body.Close()
				t.Fatalf("accepted without a valid client certificate (status %d)", resp.StatusCode)
			}
		})
	}
}

// TestTLSMinVersion: 1.3 configured refuses a 1.2-only client; the
// default accepts it.
func TestTLSMinVersion(t *testing.T) {
	for _, tc := range []struct {
		min    string
		wantOK bool
	}{{"", true}, {"1.2", true}, {"1.3", false}} {
		t.Run("min="+tc.min, func(t *testing.T) {
			ts := startServer(t, serverSetup{override: func(s *config.Server) { s.TLSMinVersion = tc.min }})
			conn, err := tls.Dial("tcp", ts.Addr().String(), &tls.Config{
				RootCAs: ts.caPool, ServerName: "localhost", MaxVersion: tls.VersionTLS12,
			})
			if err == nil {
				conn.Close()
			}
			if (err == nil) != tc.wantOK {
				t.Fatalf("TLS 1.2 handshake error %v, want ok=%v", err, tc.wantOK)
			}
		})
	}
}

// TestCertRotation: replacing the certificate files, either file by file
// or by Kubernetes' ..data symlink swap, gives new connections the new
// certificate without a restart, while an established connection keeps
// working.
func TestCertRotation(t *testing.T) {
	for _, style := range []string{"rename", "symlink-swap"} {
		t.Run(style, func(t *testing.T) {
			ts := startServer(t, serverSetup{})
			dir := ts.certDir
			if style == "symlink-swap" {
				// Restart on a Secret-style layout: tls.crt -> ..data/tls.crt.
				ts.stop(t)
				dir = t.TempDir()
				firstCA := secretLayout(t, dir, "..v1")
				ts = startServer(t, serverSetup{override: func(s *config.Server) {
					s.TLSCert, s.TLSKey = filepath.Join(dir, certgen.CertFile), filepath.Join(dir, certgen.KeyFile)
				}})
				ts.caPool.AppendCertsFromPEM(firstCA)
			}
			keep := newClient(ts.caPool, nil) // holds one keep-alive connection
			defer keep.CloseIdleConnections()
			before := serial(t, ts)
			getOK(t, keep, ts.url+"/healthz")

			var newCA []byte
			switch style {
			case "rename":
				staged := t.TempDir()
				b := writeBundle(t, staged)
				newCA = b.CACert
				for _, f := range []string{certgen.KeyFile, certgen.CertFile} {
					if err := os.Rename(filepath.Join(staged, f), filepath.Join(dir, f)); err != nil {
						t.Fatal(err)
					}
				}
			case "symlink-swap":
				newCA = secretLayout(t, dir, "..v2")
			}
			waitSerialChange(t, ts, before)
			ts.caPool.AppendCertsFromPEM(newCA)
			after := serial(t, ts)
			if after.Cmp(before) == 0 {
				t.Fatal("serial unchanged after rotation")
			}
			getOK(t, keep, ts.url+"/healthz") // the old connection still serves
			if got := metric(t, ts.reg, "graft_tls_certificate_expiry_timestamp_seconds"); got <= float64(time.Now().Unix()) {
				t.Errorf("expiry gauge %v not in the future", got)
			}
			if got := metric(t, ts.reg, "graft_tls_reloads_total", "result", "success"); got < 1 {
				t.Errorf("tls reloads{success} = %v, want at least 1", got)
			}
		})
	}
}

// secretLayout writes a new bundle into dir/<version> and points ..data at
// it atomically, as the kubelet updates a mounted Secret. It returns the
// bundle's CA.
func secretLayout(t *testing.T, dir, version string) []byte {
	t.Helper()
	b := writeBundle(t, filepath.Join(dir, version))
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(version, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{certgen.CertFile, certgen.KeyFile} {
		link := filepath.Join(dir, f)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", f), link); err != nil {
			t.Fatal(err)
		}
	}
	return b.CACert
}

// waitSerialChange waits for certificate reload reports until the served
// certificate differs from before.
func waitSerialChange(t *testing.T, ts *testServer, before *big.Int) {
	t.Helper()
	for {
		if err := waitEvent(t, ts.certEvs, "certificate"); err != nil {
			continue // a half-replaced pair; the next event completes it
		}
		if cur := ts.certs.cur.Load().Leaf.SerialNumber; cur.Cmp(before) != 0 {
			return
		}
	}
}

// serial opens a new connection and returns the served certificate's
// serial number (verification is not the point here).
func serial(t *testing.T, ts *testServer) *big.Int {
	t.Helper()
	conn, err := tls.Dial("tcp", ts.Addr().String(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber
}

func getOK(t *testing.T, c *http.Client, url string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	// Read to the end: only then does the client pool the connection.
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
}

// TestCertReloadBadPairKeepsServing: a certificate file that does not load
// is logged and the current certificate keeps serving.
func TestCertReloadBadPairKeepsServing(t *testing.T) {
	ts := startServer(t, serverSetup{})
	before := serial(t, ts)
	writeFile(t, filepath.Join(ts.certDir, certgen.CertFile), "not a certificate\n")
	if err := waitEvent(t, ts.certEvs, "certificate"); err == nil {
		t.Fatal("garbage certificate loaded")
	}
	if after := serial(t, ts); after.Cmp(before) != 0 {
		t.Fatalf("serial changed to %v", after)
	}
	getOK(t, ts.client, ts.url+"/healthz")
	if !strings.Contains(ts.logs.String(), "certificate reload failed; keeping the current one") {
		t.Error("failure not logged")
	}
	if got := metric(t, ts.reg, "graft_tls_reloads_total", "result", "error"); got != 1 {
		t.Errorf("tls reloads{error} = %v, want 1", got)
	}
}

// TestClientCARotation: --client-ca is watched like the serving
// certificate. New handshakes verify against the CAs last loaded while an
// established connection keeps serving; a file that does not load is
// logged and counted, and the previous CAs keep verifying.
func TestClientCARotation(t *testing.T) {
	oldCA, newCA := newPKI(t, "old-client-ca"), newPKI(t, "new-client-ca")
	caFile := filepath.Join(t.TempDir(), "client-ca", "ca.crt")
	writeFile(t, caFile, string(oldCA.pem))
	ts := startServer(t, serverSetup{override: func(s *config.Server) { s.ClientCA = caFile }})
	oldCert, newCert := oldCA.clientCert(t, "kube-apiserver"), newCA.clientCert(t, "kube-apiserver")
	accepted := func(cert *tls.Certificate) bool {
		c := newClient(ts.caPool, cert)
		defer c.CloseIdleConnections()
		resp, err := c.Get(ts.url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	reloads := func(result string) float64 {
		return metric(t, ts.reg, "graft_tls_reloads_total", "result", result)
	}
	if !accepted(oldCert) || accepted(newCert) {
		t.Fatal("before rotation: want the old CA's client accepted and the new CA's refused")
	}
	keep := newClient(ts.caPool, oldCert)
	defer keep.CloseIdleConnections()
	getOK(t, keep, ts.url+"/healthz")

	writeFile(t, caFile, string(newCA.pem))
	if err := waitEvent(t, ts.certEvs, "client CA"); err != nil {
		t.Fatalf("new client CA rejected: %v", err)
	}
	if accepted(oldCert) || !accepted(newCert) {
		t.Fatal("after rotation: want the new CA's client accepted and the old CA's refused")
	}
	getOK(t, keep, ts.url+"/healthz") // established before the rotation
	if got := reloads("success"); got != 1 {
		t.Errorf("tls reloads{success} = %v, want 1", got)
	}

	writeFile(t, caFile, "not a certificate\n")
	if err := waitEvent(t, ts.certEvs, "client CA"); err == nil {
		t.Fatal("a file without certificates was loaded")
	}
	if !accepted(newCert) {
		t.Error("after a bad file the previous client CA no longer verifies")
	}
	if got := reloads("error"); got != 1 {
		t.Errorf("tls reloads{error} = %v, want 1", got)
	}
	if !strings.Contains(ts.logs.String(), "client CA reload failed; keeping the current one") {
		t.Error("failure not logged")
	}
}
