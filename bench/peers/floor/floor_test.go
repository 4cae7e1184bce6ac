package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/bench/internal/benchtls"
	"github.com/graftdev/graft/bench/load"
	"github.com/graftdev/graft/bench/peers/internal/peerkit"
)

// startFloor runs the floor on loopback ports and returns its URLs.
func startFloor(t *testing.T) (serveURL, adminURL string, client *tls.Config) {
	t.Helper()
	files, client, err := benchtls.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := peerkit.TLSConfig(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, tlsCfg, ln, admin) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("floor did not stop")
		}
	})
	return "https://" + ln.Addr().String(), "http://" + admin.Addr().String(), client
}

func TestFloorAnswersEveryCorpus(t *testing.T) {
	serveURL, _, client := startFloor(t)
	for _, name := range []string{corpus.Small, corpus.V1beta1, corpus.Large} {
		for _, size := range []int{0, 1800, 12000} {
			t.Run(fmt.Sprintf("%s/size=%d", name, size), func(t *testing.T) {
				reqs, err := load.ParseRequests([][]byte{corpus.Review(name)})
				if err != nil {
					t.Fatal(err)
				}
				res, err := load.Run(context.Background(), load.Config{
					URL: fmt.Sprintf("%s/inject?timeout=10s&size=%d", serveURL, size), TLS: client,
					Requests: reqs, Mode: load.Closed, Concurrency: 2, MaxRequests: 10, SampleEvery: 1,
				})
				if err != nil {
					t.Fatal(err)
				}
				if res.TotalErrors() != 0 || res.OK != 10 {
					t.Fatalf("OK = %d, errors = %v (%s)", res.OK, res.Errors, res.FirstError)
				}
				if wantPatch := size > 0; (res.Patched > 0) != wantPatch {
					t.Errorf("Patched = %d, want a patch: %v", res.Patched, wantPatch)
				}
				if size > 0 && math.Abs(res.RespBytes-float64(size)) > 4 {
					t.Errorf("response is %.0f bytes, want %d", res.RespBytes, size)
				}
			})
		}
	}
}

func TestFloorRejects(t *testing.T) {
	serveURL, adminURL, client := startFloor(t)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: client}}
	tests := []struct {
		name, method, body string
		want               int
	}{
		{"GET", http.MethodGet, "", http.StatusMethodNotAllowed},
		{"not JSON", http.MethodPost, "{", http.StatusBadRequest},
		{"no uid", http.MethodPost, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}`, http.StatusBadRequest},
		{"not a review", http.MethodPost, `{"apiVersion":"v1","request":{"uid":"x"}}`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, serveURL+"/inject", strings.NewReader(tt.body))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
	resp, err := http.Get(adminURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "go_memstats_mallocs_total") {
		t.Errorf("/metrics lacks go_memstats_mallocs_total")
	}
}

func TestRunNeedsCerts(t *testing.T) {
	err := run(context.Background(), []string{"--addr", "127.0.0.1:0"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--tls-cert") {
		t.Fatalf("err = %v, want one naming --tls-cert", err)
	}
}
