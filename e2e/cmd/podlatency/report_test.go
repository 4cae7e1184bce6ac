package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/e2e/internal/histo"
)

func TestRowsAndTargets(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	vs := []variant{{name: "none"}, {name: "graft", webhook: "g"}, {name: "minimal", webhook: "m"}, {name: "policy", policy: "p"}}
	m := snapshot{
		webhooks: map[string]histo.Histogram{"g": {Total: 4, Sum: 0.004}, "m": {Total: 2, Sum: 0.001}},
		policies: map[string]histo.Histogram{"p": {Total: 2, Sum: 0.0002}},
		patch:    histo.Histogram{Total: 2, Sum: 6000},
	}
	// The plugin's time per create: 60 µs for graft's Pods, 10 elsewhere.
	plugin := []histo.Histogram{{Total: 2, Sum: 0.00002}, {Total: 2, Sum: 0.00012}, {}, {}}
	seq := []phaseResult{{lat: ms(2, 4), m: m}, {lat: ms(5, 7), m: m}, {lat: ms(5, 5), m: m}, {lat: ms(4, 6), m: m}}
	r := newReport(vs, seq, seq, plugin)
	g := r.Sequential[1]
	if g.P50US != 5000 || g.P50OverUS != 3000 || g.CallsPerCreate != 2 || g.WebhookUS != 1000 || g.MaxUS != 7000 {
		t.Fatalf("graft row %+v", g)
	}
	if p := r.Sequential[3]; p.CallsPerCreate != 1 || p.WebhookUS != 100 {
		t.Fatalf("policy row %+v", p)
	}
	if r.Guarantee.GraftUS < 59.9 || r.Guarantee.GraftUS > 60.1 || r.Guarantee.OtherUS < 9.9 || r.Guarantee.OtherUS > 10.1 || r.GraftPatchBytes != 3000 {
		t.Fatalf("guarantee %+v, patch %v", r.Guarantee, r.GraftPatchBytes)
	}
	met := map[string]bool{}
	for _, tg := range r.Targets {
		met[tg.Figure] = tg.Met
	}
	want := map[string]bool{
		"graft calls per Pod create (sequential)":                        false, // 2 calls
		"graft calls per Pod create (burst)":                             false,
		"guarantee policy per create (ValidatingAdmissionPolicy plugin)": true,  // 0.06 ms
		"graft p50 overhead / minimal webhook's":                         true,  // 3 / 3
		"graft p50 overhead - MutatingAdmissionPolicy's":                 true,  // 3 - 2 = 1 ms
		"graft burst p99 / minimal webhook's":                            false, // 7 / 5
	}
	for k, v := range want {
		if got, ok := met[k]; !ok || got != v {
			t.Errorf("target %q: met %v (present %v), want %v", k, got, ok, v)
		}
	}
	if md := r.markdown(); !strings.Contains(md, "| graft | 2 | 0 | 5.00 ms") || !strings.Contains(md, "| graft calls per Pod create (sequential) | 1.00 | 2.00 | no |") {
		t.Errorf("markdown:\n%s", md)
	}
}

func TestMinimalWebhook(t *testing.T) {
	h := &minimalWebhook{patch: base64.StdEncoding.EncodeToString([]byte(`[{"op":"add","path":"/spec/initContainers","value":[]}]`))}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","object":{"spec":{}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Response   struct {
			UID       string `json:"uid"`
			Allowed   bool   `json:"allowed"`
			PatchType string `json:"patchType"`
			Patch     []byte `json:"patch"`
		} `json:"response"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response.UID != "u-1" ||
		!out.Response.Allowed || out.Response.PatchType != "JSONPatch" || !strings.Contains(string(out.Response.Patch), "initContainers") {
		t.Fatalf("response %+v", out)
	}
	bad, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"request":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest {
		t.Fatalf("a review without uid: %s, want 400", bad.Status)
	}
}

func TestRecordToleratesFewRefusals(t *testing.T) {
	var r phaseResult
	refused := fmt.Errorf("v: %w: etcdserver: request timed out", errRefused)
	if err := r.record(time.Millisecond, nil, 100); err != nil || len(r.lat) != 1 {
		t.Fatalf("success: %v, %d latencies", err, len(r.lat))
	}
	// 1% of 100 attempts, plus one.
	for i := range 2 {
		if err := r.record(time.Second, refused, 100); err != nil {
			t.Fatalf("refusal %d: %v", i+1, err)
		}
	}
	if err := r.record(time.Second, refused, 100); err == nil || r.failed != 3 || len(r.lat) != 1 {
		t.Fatalf("third refusal of 100: %v, failed %d", err, r.failed)
	}
	if err := (&phaseResult{}).record(0, errors.New("stored Pod is not as expected"), 100); err == nil {
		t.Fatal("a Pod without the mutation did not end the run")
	}
}
