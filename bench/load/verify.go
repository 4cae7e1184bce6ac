package load

import (
	"bytes"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
)

// ErrorKind classifies a failed request.
type ErrorKind int

const (
	ErrTransport ErrorKind = iota // connection, TLS or timeout
	ErrStatus                     // HTTP status other than 200
	ErrUID                        // uid not echoed
	ErrDenied                     // allowed is not true
	ErrReview                     // not a well-formed review of the right version
	ErrPatch                      // patch missing its type, undecodable, or fails to apply
	numErrorKinds
)

var errorKindNames = [numErrorKinds]string{"transport", "status", "uid", "denied", "review", "patch"}

func (k ErrorKind) String() string {
	if k >= 0 && k < numErrorKinds {
		return errorKindNames[k]
	}
	return "unknown"
}

var allowedTrue = []byte(`"allowed":true`)

// quickCheck is done on every response: byte searches only, so the
// generator stays faster than the servers it measures.
func quickCheck(r *Request, status int, body []byte) (ErrorKind, bool) {
	if status != 200 {
		return ErrStatus, false
	}
	if !bytes.Contains(body, r.uidNeedle) {
		return ErrUID, false
	}
	if !bytes.Contains(body, allowedTrue) {
		return ErrDenied, false
	}
	return 0, true
}

// Verdict is the outcome of a full check.
type Verdict struct {
	Kind    ErrorKind
	Err     error // nil: the response is right
	Patched bool
}

// FullCheck decodes the response and, if it carries a patch, applies it to
// the request's object as the API server would and decodes the result as a
// Pod.
func FullCheck(r *Request, body []byte) Verdict {
	var rev struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Response   *struct {
			UID       string  `json:"uid"`
			Allowed   bool    `json:"allowed"`
			PatchType *string `json:"patchType"`
			Patch     []byte  `json:"patch"` // base64 in JSON
		} `json:"response"`
	}
	if err := json.Unmarshal(body, &rev); err != nil {
		return Verdict{Kind: ErrReview, Err: fmt.Errorf("response: %w", err)}
	}
	if rev.Kind != "AdmissionReview" || rev.APIVersion != r.APIVersion {
		return Verdict{Kind: ErrReview, Err: fmt.Errorf("response is %s %s, want AdmissionReview %s", rev.APIVersion, rev.Kind, r.APIVersion)}
	}
	resp := rev.Response
	if resp == nil {
		return Verdict{Kind: ErrReview, Err: fmt.Errorf("response: no response field")}
	}
	if resp.UID != r.UID {
		return Verdict{Kind: ErrUID, Err: fmt.Errorf("response uid %q, want %q", resp.UID, r.UID)}
	}
	if !resp.Allowed {
		return Verdict{Kind: ErrDenied, Err: fmt.Errorf("response: not allowed")}
	}
	if len(resp.Patch) == 0 && resp.PatchType == nil {
		return Verdict{}
	}
	if resp.PatchType == nil || *resp.PatchType != "JSONPatch" || len(resp.Patch) == 0 {
		return Verdict{Kind: ErrPatch, Err: fmt.Errorf("response: patch and patchType JSONPatch must come together")}
	}
	p, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		return Verdict{Kind: ErrPatch, Err: fmt.Errorf("patch: %w", err)}
	}
	out, err := p.Apply(r.Object)
	if err != nil {
		return Verdict{Kind: ErrPatch, Err: fmt.Errorf("patch does not apply: %w", err)}
	}
	var pod corev1.Pod
	if err := json.Unmarshal(out, &pod); err != nil {
		return Verdict{Kind: ErrPatch, Err: fmt.Errorf("patched object is not a Pod: %w", err)}
	}
	return Verdict{Patched: true}
}
