package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	jsonpatch "github.com/evanphx/json-patch/v5"
	yaml "go.yaml.in/yaml/v3"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/graftdev/graft/inject"
)

// offlineUID is the uid of every review graft builds offline; fixed so
// that output is deterministic.
const offlineUID = "00000000-0000-4000-8000-00000000cafe"

// offlineUser is who the synthetic reviews say created the Pod.
const offlineUser = "graft-offline"

// admitter runs Pods through the engine the way the API server sends them
// to the webhook: a CREATE AdmissionReview (admission.k8s.io/v1) per Pod.
type admitter struct {
	engine offlineEngine
	opts   inject.Options
	// namespace is used for objects that do not name theirs.
	namespace string
}

// podJSON returns the Pod at spot as JSON: the object itself for a Pod, or
// a Pod built from a workload's template.
func podJSON(spot podSpot) ([]byte, error) {
	if spot.isPod {
		return nodeJSON(spot.holder)
	}
	meta := []byte("{}")
	if m := mapGet(spot.holder, "metadata"); m != nil && m.Kind == yaml.MappingNode {
		var err error
		if meta, err = nodeJSON(m); err != nil {
			return nil, err
		}
	}
	spec, err := nodeJSON(mapGet(spot.holder, "spec"))
	if err != nil {
		return nil, err
	}
	pod := make([]byte, 0, len(meta)+len(spec)+64)
	pod = append(pod, `{"apiVersion":"v1","kind":"Pod","metadata":`...)
	pod = append(pod, meta...)
	pod = append(pod, `,"spec":`...)
	pod = append(pod, spec...)
	return append(pod, '}'), nil
}

// review wraps pod into the AdmissionReview the API server would send.
func (a *admitter) review(spot podSpot, pod []byte) ([]byte, error) {
	ns, err := a.namespaceFor(spot)
	if err != nil {
		return nil, err
	}
	name := ""
	if spot.isPod {
		name = mapString(mapGet(spot.holder, "metadata"), "name")
	}
	gvk := metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
	gvr := metav1.GroupVersionResource{Version: "v1", Resource: "pods"}
	rev := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:             types.UID(offlineUID),
			Kind:            gvk,
			Resource:        gvr,
			RequestKind:     &gvk,
			RequestResource: &gvr,
			Name:            name,
			Namespace:       ns,
			Operation:       admissionv1.Create,
			UserInfo:        authenticationv1.UserInfo{Username: offlineUser},
			Object:          runtime.RawExtension{Raw: pod},
			Options:         runtime.RawExtension{Raw: []byte(`{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions"}`)},
		},
	}
	return json.Marshal(&rev)
}

// injectDocument injects into every Pod of d, in place, calling warn with
// each warning the webhook would show. Errors name the document.
func (a *admitter) injectDocument(d *document, warn func(what, msg string)) []error {
	spots, err := findPods(d)
	if err != nil {
		return []error{&docError{source: d.source, index: d.index, err: err}}
	}
	var errs []error
	patched := make([][]byte, len(spots))
	for i, s := range spots {
		p, warnings, err := a.admit(s)
		for _, w := range warnings {
			warn(s.what, w)
		}
		if err != nil {
			errs = append(errs, &docError{source: d.source, index: d.index, what: s.what, err: err})
		}
		patched[i] = p
	}
	if len(errs) > 0 || !slices.ContainsFunc(patched, func(p []byte) bool { return p != nil }) {
		return errs
	}
	// Edits happen in place: a node shared through a YAML alias would
	// change everywhere it appears, so unshare first (the value is the
	// same) and find the Pods again in the unshared tree.
	if hasAliases(d.node) {
		expandAliases(d.node)
		if spots, err = findPods(d); err != nil || len(spots) != len(patched) {
			return []error{&docError{source: d.source, index: d.index, err: fmt.Errorf("expanding YAML aliases: %v", err)}}
		}
	}
	for i, s := range spots {
		if patched[i] == nil {
			continue
		}
		if err := putBack(s, patched[i]); err != nil {
			errs = append(errs, &docError{source: d.source, index: d.index, what: s.what, err: err})
		}
	}
	return errs
}

// admit runs the Pod at spot through the engine and returns it patched, or
// nil when the webhook would leave it alone, with the webhook's warnings.
func (a *admitter) admit(spot podSpot) ([]byte, []string, error) {
	pod, err := podJSON(spot)
	if err != nil {
		return nil, nil, err
	}
	body, err := a.review(spot, pod)
	if err != nil {
		return nil, nil, err
	}
	out, res, err := a.engine.Admit(nil, body, a.opts)
	if err != nil {
		return nil, nil, err
	}
	resp, err := decodeResponse(out)
	if err != nil {
		return nil, nil, err
	}
	if !resp.Allowed {
		return nil, resp.Warnings, fmt.Errorf("denied (%s): %s", res.Reason, denyMessage(resp))
	}
	if len(resp.Patch) == 0 {
		return nil, resp.Warnings, nil
	}
	patched, err := applyPatch(pod, resp)
	if err != nil {
		return nil, resp.Warnings, err
	}
	return patched, resp.Warnings, nil
}

func decodeResponse(out []byte) (*admissionv1.AdmissionResponse, error) {
	var rev admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &rev); err != nil {
		return nil, fmt.Errorf("engine response: %w", err)
	}
	if rev.Response == nil {
		return nil, errors.New("engine response: no response")
	}
	if rev.Response.UID != offlineUID {
		return nil, fmt.Errorf("engine response: uid %q, want %q", rev.Response.UID, offlineUID)
	}
	return rev.Response, nil
}

func denyMessage(resp *admissionv1.AdmissionResponse) string {
	if resp.Result != nil && resp.Result.Message != "" {
		return resp.Result.Message
	}
	return "no message"
}

// applyPatch applies the response's JSONPatch to pod, as the API server
// does. The patch arrives base64-encoded; encoding/json decodes it into
// resp.Patch.
func applyPatch(pod []byte, resp *admissionv1.AdmissionResponse) ([]byte, error) {
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		return nil, errors.New("engine response: a patch without patchType JSONPatch")
	}
	p, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		return nil, fmt.Errorf("engine patch: %w", err)
	}
	patched, err := p.Apply(pod)
	if err != nil {
		return nil, fmt.Errorf("engine patch does not apply: %w", err)
	}
	return patched, nil
}

// putBack writes the patched Pod into the document: the whole object for a
// Pod, metadata and spec for a template. Unchanged parts keep their
// original nodes.
func putBack(spot podSpot, patched []byte) error {
	newPod, err := jsonNode(patched)
	if err != nil {
		return fmt.Errorf("patched Pod: %w", err)
	}
	if newPod.Kind != yaml.MappingNode {
		return errors.New("patched Pod is not an object")
	}
	if spot.doc != nil {
		spot.doc.changed = true
	}
	if spot.isPod {
		*spot.holder = *keepOriginal(spot.holder, newPod)
		return nil
	}
	for _, key := range []string{"metadata", "spec"} {
		nv := mapGet(newPod, key)
		if nv == nil {
			return fmt.Errorf("patched Pod has no %s", key)
		}
		ov := mapGet(spot.holder, key)
		if ov == nil && nv.Kind == yaml.MappingNode && len(nv.Content) == 0 {
			continue // the template had no metadata and still needs none
		}
		if ov == nil && key == "metadata" {
			// Where a template's metadata usually is: before its spec.
			mapInsertFirst(spot.holder, key, nv)
			continue
		}
		mapSet(spot.holder, key, keepOriginal(ov, nv))
	}
	return nil
}

// namespaceFor is the namespace the Pod would be created in: the object's,
// else --namespace, else "default". Like kubectl, an object that names
// another namespace than --namespace is an error.
func (a *admitter) namespaceFor(spot podSpot) (string, error) {
	switch {
	case spot.namespace != "" && a.namespace != "" && spot.namespace != a.namespace:
		return "", fmt.Errorf("namespace %q of the object does not match --namespace %q", spot.namespace, a.namespace)
	case spot.namespace != "":
		return spot.namespace, nil
	case a.namespace != "":
		return a.namespace, nil
	}
	return "default", nil
}
