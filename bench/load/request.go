package load

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Request is one AdmissionReview body and what its answer must carry.
type Request struct {
	Body []byte
	// APIVersion and UID are the review's; the answer must echo both.
	APIVersion string
	UID        string
	// Object is the raw request.object the patch must apply to.
	Object []byte

	uidNeedle []byte // `"uid":"<uid>"`, for the cheap check
}

// ParseRequest reads what the checks need from an AdmissionReview body.
func ParseRequest(body []byte) (*Request, error) {
	var rev struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Request    *struct {
			UID    string          `json:"uid"`
			Object json.RawMessage `json:"object"`
		} `json:"request"`
	}
	if err := json.Unmarshal(body, &rev); err != nil {
		return nil, fmt.Errorf("load: request body: %w", err)
	}
	if rev.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("load: request body: kind %q, want AdmissionReview", rev.Kind)
	}
	if rev.Request == nil || rev.Request.UID == "" {
		return nil, errors.New("load: request body: no request.uid")
	}
	uid, err := json.Marshal(rev.Request.UID)
	if err != nil {
		return nil, fmt.Errorf("load: request body: %w", err)
	}
	return &Request{
		Body:       body,
		APIVersion: rev.APIVersion,
		UID:        rev.Request.UID,
		Object:     rev.Request.Object,
		uidNeedle:  append([]byte(`"uid":`), uid...),
	}, nil
}

// ParseRequests parses every body.
func ParseRequests(bodies [][]byte) ([]*Request, error) {
	out := make([]*Request, 0, len(bodies))
	for i, b := range bodies {
		r, err := ParseRequest(b)
		if err != nil {
			return nil, fmt.Errorf("body %d: %w", i, err)
		}
		out = append(out, r)
	}
	return out, nil
}
