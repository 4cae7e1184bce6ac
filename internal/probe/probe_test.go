package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/inject"
)

// engineAnswer is graft's engine's answer to r, with the built-in
// configuration: what graft serve would send back.
func engineAnswer(t testing.TB, r Review) []byte {
	t.Helper()
	f, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.RevisionsConfig("")
	if err != nil {
		t.Fatal(err)
	}
	revs, err := inject.NewRevisions(rc)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := revs.Admit(nil, r.Body, inject.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// edit decodes an answer, changes it and encodes it again.
func edit(t *testing.T, body []byte, change func(resp map[string]any, top map[string]any)) []byte {
	t.Helper()
	var top map[string]any
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	change(top["response"].(map[string]any), top)
	out, err := json.Marshal(top)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCheck: graft's own answer passes; each way an answer can fail the
// API server is refused, naming what is wrong.
func TestCheck(t *testing.T) {
	r, err := NewReview("shop")
	if err != nil {
		t.Fatal(err)
	}
	good := engineAnswer(t, r)
	res, err := Check(r, good)
	if err != nil {
		t.Fatalf("graft's own answer: %v", err)
	}
	if res.Ops == 0 || !slices.Contains(res.Templates, "mesh-proxy") {
		t.Errorf("result %+v: want patch operations and the default profile's mesh-proxy", res)
	}

	patchOf := func(ops string) string { return b64(ops) }
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"not JSON", []byte("<html>"), "not an AdmissionReview"},
		{"v1beta1", edit(t, good, func(_, top map[string]any) { top["apiVersion"] = "admission.k8s.io/v1beta1" }), "want admission.k8s.io/v1"},
		{"no response", edit(t, good, func(_, top map[string]any) { delete(top, "response") }), "no response"},
		{"another uid", edit(t, good, func(resp, _ map[string]any) { resp["uid"] = "x" }), `uid "x"`},
		{"refused", edit(t, good, func(resp, _ map[string]any) {
			resp["allowed"] = false
			resp["status"] = map[string]any{"message": "budget exceeded"}
		}), "refused: budget exceeded"},
		{"no patch", edit(t, good, func(resp, _ map[string]any) { delete(resp, "patch"); delete(resp, "patchType") }), "no JSON patch"},
		{"patch not JSON", edit(t, good, func(resp, _ map[string]any) { resp["patch"] = patchOf("{") }), "does not decode"},
		{"patch does not apply", edit(t, good, func(resp, _ map[string]any) {
			resp["patch"] = patchOf(`[{"op":"remove","path":"/spec/initContainers/0"}]`)
		}), "does not apply"},
		{"no status record", edit(t, good, func(resp, _ map[string]any) {
			resp["patch"] = patchOf(`[{"op":"add","path":"/metadata/annotations","value":{"a":"b"}}]`)
		}), "has no graft.dev/status"},
		{"empty status record", edit(t, good, func(resp, _ map[string]any) {
			resp["patch"] = patchOf(`[{"op":"add","path":"/metadata/annotations","value":{"graft.dev/status":"{\"version\":2}"}}]`)
		}), "records no template"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Check(r, c.body)
			if !errors.Is(err, ErrAnswer) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Check: %v, want ErrAnswer naming %q", err, c.want)
			}
		})
	}
}

func b64(s string) string {
	out, _ := json.Marshal([]byte(s)) // []byte marshals as base64
	return strings.Trim(string(out), `"`)
}

// TestNewReview: each review has its own uid and is a dry-run CREATE of a
// Pod in the namespace given.
func TestNewReview(t *testing.T) {
	a, err := NewReview("shop")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewReview("shop")
	if err != nil {
		t.Fatal(err)
	}
	if a.UID == b.UID || len(a.UID) != 32 {
		t.Errorf("uids %q and %q: want two random ones", a.UID, b.UID)
	}
	var rv struct {
		Request struct {
			UID, Namespace, Operation string
			DryRun                    bool
			Object                    struct{ Kind string }
		}
	}
	if err := json.Unmarshal(a.Body, &rv); err != nil {
		t.Fatal(err)
	}
	q := rv.Request
	if q.UID != a.UID || q.Namespace != "shop" || q.Operation != "CREATE" || !q.DryRun || q.Object.Kind != "Pod" {
		t.Errorf("request %+v", q)
	}
}

// TestSend: a non-200 answer is an error quoting its start, and an answer
// over the bound is refused without reading it all.
func TestSend(t *testing.T) {
	r, err := NewReview("shop")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/nope":
			http.Error(w, "no such profile", http.StatusNotFound)
		case "/huge":
			_, _ = w.Write(bytes.Repeat([]byte("x"), maxResponse+1))
		default:
			if req.Header.Get("Content-Type") != "application/json" {
				http.Error(w, "content type", http.StatusUnsupportedMediaType)
				return
			}
			_, _ = w.Write(engineAnswer(t, r))
		}
	}))
	defer srv.Close()
	if _, _, err := Send(t.Context(), srv.Client(), srv.URL+"/nope", r); !errors.Is(err, ErrAnswer) || !strings.Contains(err.Error(), "no such profile") {
		t.Errorf("404: %v", err)
	}
	if _, _, err := Send(t.Context(), srv.Client(), srv.URL+"/huge", r); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("an answer over the bound: %v", err)
	}
	body, _, err := Send(t.Context(), srv.Client(), srv.URL+"/inject", r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(r, body); err != nil {
		t.Error(err)
	}
}

// FuzzCheck: no answer makes Check panic, and none but one carrying the
// request's uid passes.
func FuzzCheck(f *testing.F) {
	r, err := NewReview("shop")
	if err != nil {
		f.Fatal(err)
	}
	good := engineAnswer(f, r)
	f.Add(good)
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"` + r.UID + `","allowed":true,"patchType":"JSONPatch","patch":"W10="}}`))
	f.Add([]byte(`{"response":null}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := Check(r, body); err == nil && !bytes.Contains(body, []byte(r.UID)) {
			t.Errorf("accepted an answer without the request's uid: %s", body)
		}
	})
}
