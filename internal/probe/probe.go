// Package probe sends graft one AdmissionReview, as the API server would,
// and checks the answer: the `graft probe` command, which the Helm
// chart's test hook runs through graft's Service.
package probe

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/graftdev/graft/internal/bounded"
	"github.com/graftdev/graft/internal/names"
)

// maxResponse bounds the answer read: a review of the probe's small Pod
// with its patch is a few KiB; anything near this is not graft's.
const maxResponse = 1 << 20

// ErrAnswer marks an answer that is not what graft gives the API server.
var ErrAnswer = errors.New("unexpected answer")

// Review is one AdmissionReview the probe sends: a CREATE of a small Pod,
// marked dryRun (nothing is stored, and graft's dry-run handling is what
// the API server uses for kubectl --dry-run=server).
type Review struct {
	UID  string
	Pod  []byte // the Pod, as JSON
	Body []byte // the whole review
}

// NewReview makes a review of a Pod in namespace with a random uid.
func NewReview(namespace string) (Review, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Review{}, fmt.Errorf("probe: uid: %w", err)
	}
	uid := hex.EncodeToString(b[:])
	pod, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"generateName": "graft-probe-", "namespace": namespace,
			"labels": map[string]string{names.AppNameLabel: "graft-probe"}},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.invalid/graft-probe:1"}}},
	})
	if err != nil {
		return Review{}, fmt.Errorf("probe: %w", err)
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid":         uid,
			"kind":        map[string]string{"group": "", "version": "v1", "kind": "Pod"},
			"resource":    map[string]string{"group": "", "version": "v1", "resource": "pods"},
			"requestKind": map[string]string{"group": "", "version": "v1", "kind": "Pod"},
			"namespace":   namespace,
			"operation":   "CREATE",
			"userInfo":    map[string]any{"username": "system:serviceaccount:graft-probe"},
			"object":      json.RawMessage(pod),
			"dryRun":      true,
			"options":     map[string]string{"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
		},
	})
	if err != nil {
		return Review{}, fmt.Errorf("probe: %w", err)
	}
	return Review{UID: uid, Pod: pod, Body: body}, nil
}

// Result is what graft answered, once checked.
type Result struct {
	// Ops is the number of patch operations; Templates what the patched
	// Pod's graft.dev/status records.
	Ops       int
	Templates []string
}

// answer is the part of an AdmissionReview response the probe checks.
type answer struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Response   *struct {
		UID       string `json:"uid"`
		Allowed   bool   `json:"allowed"`
		PatchType string `json:"patchType"`
		Patch     []byte `json:"patch"` // base64 in JSON
		Status    *struct {
			Message string `json:"message"`
		} `json:"status"`
		Warnings []string `json:"warnings"`
	} `json:"response"`
}

// Check checks body, graft's answer to r: the same apiVersion and kind, the
// request's uid, allowed, and a JSON patch that applies to the Pod sent
// (with the library the API server uses) and leaves graft's status record
// on it: what the API server needs to admit and mutate a Pod.
func Check(r Review, body []byte) (Result, error) {
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return Result{}, fmt.Errorf("%w: not an AdmissionReview: %w", ErrAnswer, err)
	}
	switch {
	case a.APIVersion != "admission.k8s.io/v1" || a.Kind != "AdmissionReview":
		return Result{}, fmt.Errorf("%w: %s %s, want admission.k8s.io/v1 AdmissionReview", ErrAnswer, a.APIVersion, a.Kind)
	case a.Response == nil:
		return Result{}, fmt.Errorf("%w: no response", ErrAnswer)
	case a.Response.UID != r.UID:
		return Result{}, fmt.Errorf("%w: uid %q, want the request's %q", ErrAnswer, a.Response.UID, r.UID)
	case !a.Response.Allowed:
		msg := ""
		if a.Response.Status != nil {
			msg = a.Response.Status.Message
		}
		return Result{}, fmt.Errorf("%w: the Pod was refused: %s", ErrAnswer, msg)
	case a.Response.PatchType != "JSONPatch" || len(a.Response.Patch) == 0:
		return Result{}, fmt.Errorf("%w: no JSON patch (patchType %q); warnings: %v", ErrAnswer, a.Response.PatchType, a.Response.Warnings)
	}
	patch, err := jsonpatch.DecodePatch(a.Response.Patch)
	if err != nil {
		return Result{}, fmt.Errorf("%w: the patch does not decode: %w", ErrAnswer, err)
	}
	patched, err := patch.Apply(r.Pod)
	if err != nil {
		return Result{}, fmt.Errorf("%w: the patch does not apply to the Pod sent: %w", ErrAnswer, err)
	}
	var pod struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patched, &pod); err != nil {
		return Result{}, fmt.Errorf("%w: the patched Pod: %w", ErrAnswer, err)
	}
	status, ok := pod.Metadata.Annotations[names.Status]
	if !ok {
		return Result{}, fmt.Errorf("%w: the patched Pod has no %s", ErrAnswer, names.Status)
	}
	// docs/reference/status-format.md; only the template names are read.
	var record struct {
		Templates []struct {
			Name string `json:"name"`
		} `json:"templates"`
	}
	if err := json.Unmarshal([]byte(status), &record); err != nil {
		return Result{}, fmt.Errorf("%w: %s does not parse: %w", ErrAnswer, names.Status, err)
	}
	res := Result{Ops: len(patch)}
	for _, t := range record.Templates {
		res.Templates = append(res.Templates, t.Name)
	}
	if len(res.Templates) == 0 {
		return Result{}, fmt.Errorf("%w: %s records no template", ErrAnswer, names.Status)
	}
	slices.Sort(res.Templates)
	return res, nil
}

// Send posts r to url with client and returns the answer's body, read up
// to a bound, and how long the round trip took. Anything but 200 with a
// JSON body is an error.
func Send(ctx context.Context, client *http.Client, url string, r Review) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(r.Body))
	if err != nil {
		return nil, 0, fmt.Errorf("probe: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("probe: %w", err)
	}
	defer resp.Body.Close()
	body, err := bounded.Read(resp.Body, "the answer", maxResponse)
	took := time.Since(start)
	if err != nil {
		return nil, took, fmt.Errorf("probe: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, took, fmt.Errorf("%w: HTTP %s: %s", ErrAnswer, resp.Status, bytes.TrimSpace(head(body)))
	}
	return body, took, nil
}

// head is the start of b, for messages.
func head(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}
