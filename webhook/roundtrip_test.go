package webhook

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/config"
)

// reviewReply is the part of an AdmissionReview response both v1 and
// v1beta1 share.
type reviewReply struct {
	APIVersion string                         `json:"apiVersion"`
	Kind       string                         `json:"kind"`
	Response   *admissionv1.AdmissionResponse `json:"response"`
}

func decodeReply(t *testing.T, body []byte) reviewReply {
	t.Helper()
	var r reviewReply
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("response is not JSON: %v: %.300s", err, body)
	}
	if r.Response == nil {
		t.Fatalf("no response in %.300s", body)
	}
	return r
}

// decodePatch returns the JSON patch of a review response (nil if none).
func decodePatch(t *testing.T, body []byte) []byte {
	t.Helper()
	r := decodeReply(t, body)
	if len(r.Response.Patch) == 0 {
		return nil
	}
	return r.Response.Patch // []byte fields are base64-decoded by encoding/json
}

type reviewRequest struct {
	APIVersion string `json:"apiVersion"`
	Request    struct {
		UID    string          `json:"uid"`
		Object json.RawMessage `json:"object"`
	} `json:"request"`
}

// TestRoundTrip: v1 and v1beta1 reviews over real TLS come back in their
// own version with the request's uid and a JSONPatch that applies to the
// object sent and yields a Pod with the sidecar.
func TestRoundTrip(t *testing.T) {
	// A budget of seconds: this checks the answer's shape, and the large
	// Pod under -race on a busy machine can take more than the default
	// 200 ms (then graft fails open, correctly, without a patch).
	ts := startServer(t, serverSetup{override: func(s *config.Server) { s.Budget = config.Duration{Duration: 5 * time.Second} }})
	for _, name := range []string{corpus.Small, corpus.V1beta1, corpus.Large, corpus.Prepend} {
		t.Run(name, func(t *testing.T) {
			body := corpus.Review(name)
			var req reviewRequest
			if err := json.Unmarshal(body, &req); err != nil {
				t.Fatal(err)
			}
			code, out := ts.post(t, "/inject/agent?timeout=10s", body)
			if code != http.StatusOK {
				t.Fatalf("status %d: %.300s", code, out)
			}
			r := decodeReply(t, out)
			if r.APIVersion != req.APIVersion || r.Kind != "AdmissionReview" {
				t.Errorf("answered %s %s to %s", r.APIVersion, r.Kind, req.APIVersion)
			}
			if string(r.Response.UID) != req.Request.UID {
				t.Errorf("uid %q, want %q", r.Response.UID, req.Request.UID)
			}
			if !r.Response.Allowed {
				t.Fatalf("denied: %+v", r.Response.Result)
			}
			if r.Response.PatchType == nil || *r.Response.PatchType != admissionv1.PatchTypeJSONPatch {
				t.Fatalf("patchType %v", r.Response.PatchType)
			}
			// The raw field is base64 on the wire.
			var raw struct {
				Response struct {
					Patch string `json:"patch"`
				} `json:"response"`
			}
			if err := json.Unmarshal(out, &raw); err != nil {
				t.Fatal(err)
			}
			patchJSON, err := base64.StdEncoding.DecodeString(raw.Response.Patch)
			if err != nil {
				t.Fatalf("patch is not base64: %v", err)
			}
			patch, err := jsonpatch.DecodePatch(patchJSON)
			if err != nil {
				t.Fatalf("patch does not decode: %v\n%s", err, patchJSON)
			}
			patched, err := patch.Apply(req.Request.Object)
			if err != nil {
				t.Fatalf("patch does not apply: %v\n%s", err, patchJSON)
			}
			var pod corev1.Pod
			if err := json.Unmarshal(patched, &pod); err != nil {
				t.Fatalf("patched object is not a Pod: %v", err)
			}
			found := false
			for _, c := range pod.Spec.InitContainers {
				if c.Name == "graft-agent" {
					found = true
				}
			}
			if !found {
				t.Errorf("no graft-agent init container after the patch:\n%s", patchJSON)
			}
		})
	}
}
