package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/bench/internal/benchtls"
	"github.com/graftdev/graft/bench/load"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

func newTestInjector(t *testing.T) *injector {
	t.Helper()
	in, err := newInjector()
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// answer admits body and returns the response and the patched object (nil
// when there is no patch).
func answer(t *testing.T, in *injector, body []byte) (*admissionv1.AdmissionResponse, []byte) {
	t.Helper()
	out, err := in.admit(body)
	if err != nil {
		t.Fatal(err)
	}
	var rev, req admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &rev); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if rev.APIVersion != req.APIVersion || rev.Kind != "AdmissionReview" || rev.Response == nil || rev.Response.UID != req.Request.UID {
		t.Fatalf("answer %s does not match request %s/%s", out, req.APIVersion, req.Request.UID)
	}
	if len(rev.Response.Patch) == 0 {
		return rev.Response, nil
	}
	p, err := jsonpatch.DecodePatch(rev.Response.Patch)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := p.Apply(req.Request.Object.Raw)
	if err != nil {
		t.Fatalf("patch does not apply: %v", err)
	}
	return rev.Response, patched
}

func TestInjects(t *testing.T) {
	in := newTestInjector(t)
	for _, name := range []string{corpus.Small, corpus.Medium, corpus.Large, corpus.V1beta1, corpus.Prepend} {
		t.Run(name, func(t *testing.T) {
			body := corpus.Review(name)
			resp, patched := answer(t, in, body)
			if !resp.Allowed || patched == nil {
				t.Fatalf("allowed=%v patched=%v, want an allowed patch", resp.Allowed, patched != nil)
			}
			var pod corev1.Pod
			if err := json.Unmarshal(patched, &pod); err != nil {
				t.Fatal(err)
			}
			if first := in.inits[templates.PlaceFirst]; len(first) > 0 &&
				(len(pod.Spec.InitContainers) == 0 || pod.Spec.InitContainers[0].Name != first[0].Name) {
				t.Errorf("initContainers[0] is not %s: %+v", first[0].Name, pod.Spec.InitContainers)
			}
			for _, v := range in.volumes {
				if got := countVolume(pod, v.Name); got != 1 {
					t.Errorf("volume %s %d times, want 1", v.Name, got)
				}
			}
			for _, c := range pod.Spec.Containers {
				for _, e := range in.appEnv {
					if !hasEnv(c, e.Name) {
						t.Errorf("container %s lacks %s", c.Name, e.Name)
					}
				}
			}
			if pod.Annotations[statusAnnotation] == "" {
				t.Errorf("no %s annotation", statusAnnotation)
			}
			// Idempotent: the patched Pod, admitted again, is left alone.
			again := rewrap(t, body, patched)
			if resp, p2 := answer(t, in, again); !resp.Allowed || p2 != nil {
				t.Errorf("second admission: allowed=%v, patch=%v; want allowed, no patch", resp.Allowed, p2 != nil)
			}
		})
	}
}

func TestLeavesAlone(t *testing.T) {
	in := newTestInjector(t)
	small := corpus.Review(corpus.Small)
	tests := []struct {
		name string
		body []byte
	}{
		{"opted out", corpus.Review(corpus.Skip)},
		{"update", edit(t, small, func(r map[string]any) { r["operation"] = "UPDATE" })},
		{"subresource", edit(t, small, func(r map[string]any) { r["subResource"] = "status" })},
		{"kube-system", edit(t, small, func(r map[string]any) { r["namespace"] = "kube-system" })},
		{"not a pod", edit(t, small, func(r map[string]any) { r["kind"] = map[string]any{"kind": "Service", "version": "v1"} })},
		{"host network", edit(t, small, func(r map[string]any) {
			r["object"].(map[string]any)["spec"].(map[string]any)["hostNetwork"] = true
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, patched := answer(t, in, tt.body)
			if !resp.Allowed || patched != nil {
				t.Errorf("allowed=%v patched=%v, want allowed without a patch", resp.Allowed, patched != nil)
			}
		})
	}
}

func TestAdmitRejects(t *testing.T) {
	in := newTestInjector(t)
	for _, body := range []string{`{`, `{"kind":"AdmissionReview"}`, `{"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview","request":{"uid":"x"}}`} {
		if _, err := in.admit([]byte(body)); err == nil {
			t.Errorf("admit(%s) succeeded, want an error", body)
		}
	}
	// A Pod that does not decode is denied with a message, not a panic.
	bad := edit(t, corpus.Review(corpus.Small), func(r map[string]any) { r["object"] = map[string]any{"spec": "x"} })
	resp, _ := answer(t, in, bad)
	if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, "decode Pod") {
		t.Errorf("bad Pod: %+v, want a denial saying decode Pod", resp)
	}
}

// Over real TLS, through the load generator, every corpus is answered right.
func TestServesOverTLS(t *testing.T) {
	files, client, err := benchtls.Write(t.TempDir())
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
	go func() {
		done <- run(ctx, []string{"--addr", ln.Addr().String(), "--admin-addr", admin.Addr().String(),
			"--tls-cert", files.Cert, "--tls-key", files.Key}, io.Discard)
	}()
	// run listens itself: free the addresses it will take.
	ln.Close()
	admin.Close()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("conventional did not stop")
		}
	})
	waitReady(t, "http://"+admin.Addr().String()+"/readyz")

	for _, name := range []string{corpus.Small, corpus.V1beta1, corpus.Skip, corpus.Huge} {
		t.Run(name, func(t *testing.T) {
			reqs, err := load.ParseRequests([][]byte{corpus.Review(name)})
			if err != nil {
				t.Fatal(err)
			}
			// A generous timeout: this checks what the peer answers, not how
			// fast; the huge review under -race on a busy machine took 10 s.
			res, err := load.Run(context.Background(), load.Config{
				URL: "https://" + ln.Addr().String() + "/inject?timeout=60s", TLS: client,
				Requests: reqs, Mode: load.Closed, Concurrency: 2, MaxRequests: 6, SampleEvery: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.TotalErrors() != 0 || res.OK != 6 {
				t.Fatalf("OK = %d, errors = %v (%s)", res.OK, res.Errors, res.FirstError)
			}
			if wantPatch := name != corpus.Skip; (res.Patched > 0) != wantPatch {
				t.Errorf("Patched = %d, want a patch: %v", res.Patched, wantPatch)
			}
		})
	}
}

func waitReady(t *testing.T, url string) {
	t.Helper()
	for range 200 {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("%s never became ready", url)
}

func edit(t *testing.T, body []byte, f func(req map[string]any)) []byte {
	t.Helper()
	var rev map[string]any
	if err := json.Unmarshal(body, &rev); err != nil {
		t.Fatal(err)
	}
	f(rev["request"].(map[string]any))
	out, err := json.Marshal(rev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func rewrap(t *testing.T, body, object []byte) []byte {
	return edit(t, body, func(r map[string]any) { r["object"] = json.RawMessage(object) })
}

func countVolume(p corev1.Pod, name string) int {
	n := 0
	for _, v := range p.Spec.Volumes {
		if v.Name == name {
			n++
		}
	}
	return n
}

func hasEnv(c corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// The conventional peer and graft's engine give the same Pod, so the load
// test compares the same work.
func TestSameResultAsGraft(t *testing.T) {
	in := newTestInjector(t)
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := inject.New(inject.DefaultConfig(), set)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{corpus.Small, corpus.Large, corpus.Prepend, corpus.Skip, corpus.V1beta1} {
		t.Run(name, func(t *testing.T) {
			body := corpus.Review(name)
			_, ours := answer(t, in, body)
			out, _, err := eng.Admit(nil, body, inject.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var rev admissionv1.AdmissionReview
			if err := json.Unmarshal(out, &rev); err != nil {
				t.Fatal(err)
			}
			var theirs []byte
			if len(rev.Response.Patch) > 0 {
				p, err := jsonpatch.DecodePatch(rev.Response.Patch)
				if err != nil {
					t.Fatal(err)
				}
				var req admissionv1.AdmissionReview
				if err := json.Unmarshal(body, &req); err != nil {
					t.Fatal(err)
				}
				if theirs, err = p.Apply(req.Request.Object.Raw); err != nil {
					t.Fatal(err)
				}
			}
			if (ours == nil) != (theirs == nil) {
				t.Fatalf("conventional patched: %v, graft patched: %v", ours != nil, theirs != nil)
			}
			if ours == nil {
				return
			}
			var a, b corev1.Pod
			if err := json.Unmarshal(ours, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(theirs, &b); err != nil {
				t.Fatal(err)
			}
			// graft's status records what graft added to this very Pod
			// (per template, per app container), which a conventional
			// webhook does not track; the peer writes graft's earlier,
			// constant status. Both must carry one; the rest is the same.
			if _, err := inject.ParseStatus(b.Annotations[statusAnnotation]); err != nil || a.Annotations[statusAnnotation] == "" {
				t.Fatalf("status: graft %q (%v), conventional %q", b.Annotations[statusAnnotation], err, a.Annotations[statusAnnotation])
			}
			delete(a.Annotations, statusAnnotation)
			delete(b.Annotations, statusAnnotation)
			if !equality.Semantic.DeepEqual(a, b) {
				aj, _ := json.Marshal(a)
				bj, _ := json.Marshal(b)
				t.Errorf("pods differ:\nconventional %s\ngraft        %s", aj, bj)
			}
		})
	}
}
