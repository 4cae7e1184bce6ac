package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graftdev/graft/bench/corpus"
)

// allowAll answers every review allowed, echoing uid and apiVersion.
func allowAll(w http.ResponseWriter, r *http.Request) {
	var in struct {
		APIVersion string `json:"apiVersion"`
		Request    struct {
			UID string `json:"uid"`
		} `json:"request"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": in.APIVersion, "kind": "AdmissionReview",
		"response": map[string]any{"uid": in.Request.UID, "allowed": true}})
}

func TestRun(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(allowAll))
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	review := filepath.Join(dir, "review.json")
	if err := os.WriteFile(review, corpus.Review(corpus.V1beta1), 0o600); err != nil {
		t.Fatal(err)
	}
	url := srv.URL + "/inject"
	tests := []struct {
		name    string
		args    []string
		wantErr string
		wantOut string
	}{
		{"corpus", []string{"-url", url, "-ca", ca, "-corpus", "small", "-n", "20", "-c", "2", "-warmup", "0"}, "", "requests 20 in"},
		{"file, open loop", []string{"-url", url, "-ca", ca, "-f", review, "-n", "10", "-mode", "open", "-rate", "500", "-warmup", "0"}, "", "500 req/s scheduled"},
		{"no CA", []string{"-url", url, "-corpus", "small"}, "-ca", ""},
		{"no requests", []string{"-url", url, "-ca", ca}, "-corpus or -f", ""},
		{"both", []string{"-url", url, "-ca", ca, "-corpus", "small", "-f", review}, "not both", ""},
		{"unknown corpus", []string{"-url", url, "-ca", ca, "-corpus", "tiny"}, "unknown corpus", ""},
		{"not loopback", []string{"-url", "https://192.0.2.1:443/inject", "-ca", ca, "-corpus", "small"}, "loopback", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			err := run(context.Background(), tt.args, &out, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tt.wantOut) || !strings.Contains(out.String(), "errors 0") {
				t.Errorf("output %q lacks %q or errors 0", out.String(), tt.wantOut)
			}
		})
	}
}
