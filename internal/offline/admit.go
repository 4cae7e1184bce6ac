package offline

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/manifest"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/suggest"
)

// offlineUID is the uid of every review graft builds offline; fixed so
// that output is deterministic.
const offlineUID = "00000000-0000-4000-8000-00000000cafe"

// offlineUser is who the synthetic reviews say created the Pod.
const offlineUser = "graft-offline"

// admitter runs Pods through the engine the way the API server sends them
// to the webhook: a CREATE AdmissionReview (admission.k8s.io/v1) per Pod,
// to the profile the namespace's labels select.
type admitter struct {
	engine engine
	sel    *selector
	// namespace is used for objects that do not name theirs.
	namespace string
	// jsonOut: the output is JSON, so the documents' text is not kept.
	jsonOut bool
	// params lists a template's parameters, for hints; nil: no hints.
	params func(template string) []string
}

// verdict is what the webhook would do with one Pod or Pod template.
type verdict struct {
	namespace string
	sel       selection
	decision  inject.Decision
	reason    inject.Reason
	templates []string           // injected
	kept      []inject.Kept      // left out under onConflict: keep
	warnings  []string           // the webhook's
	ops       []manifest.PatchOp // the patch, on the document
}

// summary is the verdict in a few words, for the line about the object.
func (v verdict) summary() string {
	switch {
	case v.sel.profile == "":
		return "not selected (" + v.sel.why + ")"
	case v.decision == inject.DecisionInject:
		return "injected " + cmp.Or(strings.Join(v.templates, ", "), "nothing") + keptText(v.kept)
	case v.decision == inject.DecisionSkip:
		return "skipped " + v.reason.String() + keptText(v.kept)
	}
	return "not injected (" + v.decision.String() + ": " + v.reason.String() + ")"
}

// keptText names the templates left out under onConflict: keep, whose
// reasons the webhook's warnings give.
func keptText(kept []inject.Kept) string {
	if len(kept) == 0 {
		return ""
	}
	names := make([]string, len(kept))
	for i, k := range kept {
		names[i] = k.Template
	}
	return "; kept out " + strings.Join(names, ", ") + " (onConflict: keep)"
}

// review wraps pod into the AdmissionReview the API server would send.
func (a *admitter) review(spot manifest.PodSpot, ns string, pod []byte) ([]byte, error) {
	name := ""
	if spot.IsPod {
		name = manifest.MapString(manifest.MapGet(spot.Holder, "metadata"), "name")
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

// injectDocuments injects into every Pod of docs, in place, reporting
// each object and every warning. It returns every document's errors.
func injectDocuments(a *admitter, docs []*manifest.Document, rep *Report) error {
	var errs []error
	for _, d := range docs {
		errs = append(errs, a.injectDocument(d, rep)...)
	}
	return manifest.JoinProblems(errs...)
}

// injectDocument injects into every Pod of d, in place. Errors name the
// document.
func (a *admitter) injectDocument(d *manifest.Document, rep *Report) []error {
	spots, err := manifest.FindPods(d)
	if err != nil {
		return []error{d.WrapError("", err)}
	}
	var errs []error
	var ops []manifest.PatchOp
	for _, s := range spots {
		if s.Holder == nil {
			reportNoTemplate(d, s, rep)
			continue
		}
		for _, w := range podWarnings(s) {
			rep.warn(d, s.What, w)
		}
		v, err := a.admit(s)
		for _, w := range v.warnings {
			rep.warn(d, s.What, w)
		}
		if err != nil {
			errs = append(errs, d.WrapErrorAt(s.Object, s.What, err))
			continue
		}
		if v.sel.from == fromAssumed {
			rep.note(a.sel.assumption(v.namespace))
		}
		rep.object(d, s.Ref(), v.summary())
		ops = append(ops, v.ops...)
	}
	if len(errs) > 0 || len(ops) == 0 {
		return errs
	}
	return patchDocument(d, ops, !a.jsonOut, rep)
}

// patchDocument applies ops to d, into its text if keepText and it can,
// and notes when the document had to be written anew.
func patchDocument(d *manifest.Document, ops []manifest.PatchOp, keepText bool, rep *Report) []error {
	why, err := d.Patch(ops, keepText)
	if err != nil {
		return []error{d.WrapError("", err)}
	}
	if why != "" {
		rep.note(fmt.Sprintf("%s: document %d: written anew by the YAML encoder, not as an insertion into the text: %s", d.Source(), d.Index(), why))
	}
	return nil
}

// reportNoTemplate reports an object that carries Pods graft does not
// inject into here.
func reportNoTemplate(d *manifest.Document, s manifest.PodSpot, rep *Report) {
	if s.NoTemplate != "" {
		rep.object(d, s.Ref(), s.NoTemplate)
		return
	}
	rep.warn(d, s.What, fmt.Sprintf("graft does not inject into a %s, whose Pod spec is at %s: the webhook injects its Pods when they are created, if their namespace is selected",
		manifest.MapString(s.Object, "kind"), s.Foreign))
}

// admit runs the Pod at spot through the engine, as the webhook would be
// called for it, and returns the verdict with the webhook's patch as ops
// on the document.
func (a *admitter) admit(spot manifest.PodSpot) (verdict, error) {
	var v verdict
	var body []byte
	var err error
	if v.namespace, v.sel, body, err = a.request(spot); err != nil || body == nil {
		return v, err
	}
	out, res, err := a.engine.Admit(nil, body, v.sel.options())
	if err != nil {
		return v, err
	}
	v.decision, v.reason, v.templates, v.kept = res.Decision, res.Reason, slices.Clone(res.Templates), res.Kept
	resp, err := decodeResponse(out)
	if err != nil {
		return v, err
	}
	v.warnings = resp.Warnings
	if !resp.Allowed {
		return v, fmt.Errorf("denied (%s): %s", res.Reason, strings.Join(a.denials(spot, v, body, denyMessage(resp)), "; "))
	}
	if len(resp.Patch) == 0 {
		return v, nil
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		return v, errors.New("engine response: a patch without patchType JSONPatch")
	}
	v.ops, err = spot.DocumentOps(resp.Patch)
	return v, err
}

// maxDenials bounds the problems listed for one Pod.
const maxDenials = 5

// denials lists why the engine denies the Pod of review, starting with
// first, its message. The engine stops at the first annotation it
// refuses; the author of a manifest wants them all, so while the denial
// names an annotation, the Pod is admitted again without it, and each
// message is the engine's own, with a hint for a name near a known one.
func (a *admitter) denials(spot manifest.PodSpot, v verdict, review []byte, first string) []string {
	msgs := []string{a.hint(first)}
	pod, err := podOf(review)
	for msg := first; err == nil && len(msgs) < maxDenials; {
		key, ok := deniedAnnotation(msg)
		if !ok {
			break
		}
		if pod, err = withoutAnnotation(pod, key); err != nil {
			break
		}
		body, err := a.review(spot, v.namespace, pod)
		if err != nil {
			break
		}
		out, _, err := a.engine.Admit(nil, body, v.sel.options())
		if err != nil {
			break
		}
		resp, err := decodeResponse(out)
		if err != nil || resp.Allowed {
			break
		}
		msg = denyMessage(resp)
		msgs = append(msgs, a.hint(msg))
	}
	return msgs
}

// deniedAnnotation is the annotation a denial names first:
// "annotation graft.dev/agent.port="80": ...".
func deniedAnnotation(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(msg, "annotation "+names.Prefix)
	if !ok {
		return "", false
	}
	end := strings.IndexAny(rest, "=: ")
	if end <= 0 {
		return "", false
	}
	return names.Prefix + rest[:end], true
}

// podOf is the Pod of an AdmissionReview.
func podOf(review []byte) ([]byte, error) {
	var r struct {
		Request struct {
			Object json.RawMessage `json:"object"`
		} `json:"request"`
	}
	err := json.Unmarshal(review, &r)
	return r.Request.Object, err
}

// withoutAnnotation is pod (JSON) without the annotation key.
func withoutAnnotation(pod []byte, key string) ([]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(pod, &p); err != nil {
		return nil, err
	}
	meta, _ := p["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if _, ok := ann[key]; !ok {
		return nil, fmt.Errorf("no annotation %s", key)
	}
	delete(ann, key)
	return json.Marshal(p)
}

var (
	unknownParam       = regexp.MustCompile(`template (\S+) has no parameter "([^"]*)"$`)
	templateNotAllowed = regexp.MustCompile(`template "([^"]*)" is not allowed here \(allowed: ([^)]*)\)$`)
)

// hint adds to an engine's message about a name the user got wrong the
// name they likely meant.
func (a *admitter) hint(msg string) string {
	if m := unknownParam.FindStringSubmatch(msg); m != nil && a.params != nil {
		return msg + suggest.Hint(m[2], a.params(m[1]), "its parameters")
	}
	if m := templateNotAllowed.FindStringSubmatch(msg); m != nil {
		if best, ok := suggest.Closest(m[1], strings.Split(m[2], ", ")); ok {
			return fmt.Sprintf("%s (did you mean %q?)", msg, best)
		}
	}
	return msg
}

// request is the AdmissionReview the API server would send for the Pod at
// spot, with the Pod's namespace and its selection; body is nil when the
// namespace does not select graft.
func (a *admitter) request(spot manifest.PodSpot) (ns string, sel selection, body []byte, err error) {
	if ns, err = a.namespaceFor(spot); err != nil {
		return "", sel, nil, err
	}
	if sel = a.sel.selectFor(ns); sel.profile == "" {
		return ns, sel, nil, nil
	}
	pod, err := spot.PodJSON()
	if err != nil {
		return "", sel, nil, err
	}
	body, err = a.review(spot, ns, pod)
	return ns, sel, body, err
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

// namespaceFor is the namespace the Pod would be created in: the object's,
// else --namespace, else "default". Like kubectl, an object that names
// another namespace than --namespace is an error.
func (a *admitter) namespaceFor(spot manifest.PodSpot) (string, error) {
	switch {
	case spot.Namespace != "" && a.namespace != "" && spot.Namespace != a.namespace:
		return "", fmt.Errorf("namespace %q of the object does not match --%s %q", spot.Namespace, names.FlagNamespace, a.namespace)
	case spot.Namespace != "":
		return spot.Namespace, nil
	case a.namespace != "":
		return a.namespace, nil
	}
	return "default", nil
}
