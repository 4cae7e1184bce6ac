package peerkit

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graftdev/graft/bench/internal/benchtls"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    Flags
		wantErr string
	}{
		{[]string{"--tls-cert", "c", "--tls-key", "k"}, Flags{Addr: "127.0.0.1:8443", AdminAddr: "127.0.0.1:8080", TLSCert: "c", TLSKey: "k"}, ""},
		{[]string{"--addr", "127.0.0.1:1", "--admin-addr", "127.0.0.1:2", "--tls-cert", "c", "--tls-key", "k"}, Flags{Addr: "127.0.0.1:1", AdminAddr: "127.0.0.1:2", TLSCert: "c", TLSKey: "k"}, ""},
		{[]string{"--tls-cert", "c"}, Flags{}, "--tls-key"},
		{[]string{"--bogus"}, Flags{}, "bogus"},
	}
	for _, tt := range tests {
		got, err := ParseFlags("peer", tt.args, io.Discard)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseFlags(%q) err = %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseFlags(%q) = %+v, %v; want %+v", tt.args, got, err, tt.want)
		}
	}
}

// The certificates benchtls writes serve with TLSConfig and are trusted by
// the client configuration it returns, for 127.0.0.1.
func TestTLSRoundTrip(t *testing.T) {
	dir := t.TempDir()
	files, client, err := benchtls.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(files.Key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, mode %v; want 0600", err, fi.Mode())
	}
	srvCfg, err := TLSConfig(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srvCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), client)
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if p := c.ConnectionState().NegotiatedProtocol; p != "" && p != "http/1.1" {
		t.Errorf("ALPN %q", p)
	}
	c.Close()
	if _, err := TLSConfig(filepath.Join(dir, "nope.crt"), files.Key); err == nil {
		t.Error("TLSConfig with a missing certificate succeeded")
	}
}

func TestAdmin(t *testing.T) {
	srv := httptest.NewServer(AdminHandler())
	defer srv.Close()
	for path, want := range map[string]string{"/metrics": "go_memstats_mallocs_total", "/healthz": "ok", "/readyz": "ok"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d, body lacks %q", path, resp.StatusCode, want)
		}
	}
	// ServeAdmin stops when its context ends.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeAdmin(ctx, ln) }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeAdmin: %v", err)
	}
}
