package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	regv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What the foreign mutator adds and sets. Its annotation is in a domain
// of its own: keys in graft's domains are graft's (a Pod, or a webhook
// after graft, may not set them).
const (
	foreignContainer  = "foreign"
	foreignEnv        = "FOREIGN_MUTATOR"
	foreignAnnotation = "foreign.e2e.example.com/seen"
)

// foreignMutator is another team's mutating webhook: by default it
// appends a container, sets imagePullPolicy: Always on every container,
// graft's included (graft does not compare it), and an env var on every
// container but graft's, which it leaves out by name as
// docs/concepts/guarantee.md asks (foreignPatch); patch, when set,
// replaces what it does. It is idempotent, as every mutating webhook must
// be.
type foreignMutator struct {
	calls atomic.Int64
	patch func(*corev1.Pod) []patchOp
}

func (f *foreignMutator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("bad review: %v", err), http.StatusBadRequest)
		return
	}
	var pod corev1.Pod
	if err := json.Unmarshal(review.Request.Object.Raw, &pod); err != nil {
		http.Error(w, fmt.Sprintf("bad pod: %v", err), http.StatusBadRequest)
		return
	}
	edit := f.patch
	if edit == nil {
		edit = foreignPatch
	}
	patch := edit(&pod)
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	if len(patch) > 0 {
		raw, err := json.Marshal(patch)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = raw, &pt
	}
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

func foreignPatch(p *corev1.Pod) []patchOp {
	var ops []patchOp
	if p.Annotations[foreignAnnotation] == "" {
		if p.Annotations == nil {
			ops = append(ops, patchOp{"add", "/metadata/annotations", map[string]string{}})
		}
		ops = append(ops, patchOp{"add", "/metadata/annotations/" + jsonPointerEscape(foreignAnnotation), "seen"})
	}
	containers := p.Spec.Containers
	if countContainers(p, foreignContainer) == 0 {
		c := corev1.Container{Name: foreignContainer, Image: "registry.invalid/foreign:1"}
		ops = append(ops, patchOp{"add", "/spec/containers/-", c})
		containers = append(containers, c)
	}
	edit := func(list string, cs []corev1.Container) {
		for i, c := range cs {
			base := fmt.Sprintf("/spec/%s/%d", list, i)
			if c.ImagePullPolicy != corev1.PullAlways {
				ops = append(ops, patchOp{"add", base + "/imagePullPolicy", corev1.PullAlways})
			}
			if countEnv(c, foreignEnv) == 0 && !strings.HasPrefix(c.Name, "graft-") {
				e := corev1.EnvVar{Name: foreignEnv, Value: "1"}
				if c.Env == nil {
					ops = append(ops, patchOp{"add", base + "/env", []corev1.EnvVar{e}})
				} else {
					ops = append(ops, patchOp{"add", base + "/env/-", e})
				}
			}
		}
	}
	edit("initContainers", p.Spec.InitContainers)
	edit("containers", containers)
	return ops
}

// editGraftSidecars is a webhook after graft that changes graft's
// sidecars (every container named graft-*) with edit, once each: graft,
// reinvoked, finds them no longer its own.
func editGraftSidecars(edit func(base string, c corev1.Container) []patchOp) func(*corev1.Pod) []patchOp {
	return func(p *corev1.Pod) []patchOp {
		var ops []patchOp
		for list, cs := range map[string][]corev1.Container{"initContainers": p.Spec.InitContainers, "containers": p.Spec.Containers} {
			for i, c := range cs {
				if strings.HasPrefix(c.Name, "graft-") {
					ops = append(ops, edit(fmt.Sprintf("/spec/%s/%d", list, i), c)...)
				}
			}
		}
		return ops
	}
}

func jsonPointerEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			out = append(out, "~0"...)
		case '/':
			out = append(out, "~1"...)
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}

// registerForeign serves m over TLS on loopback and registers it for the
// namespace ns only, in a configuration named to sort after graft's: the
// API server calls configurations in name order.
func registerForeign(t *testing.T, ns string, m http.Handler, reinvocation regv1.ReinvocationPolicyType) {
	t.Helper()
	registerForeignNamed(t, "zz-e2e-foreign-"+ns, ns, m, reinvocation)
}

// registerForeignNamed is registerForeign with the configuration's name
// given, which places it before or after graft's.
func registerForeignNamed(t *testing.T, name, ns string, m http.Handler, reinvocation regv1.ReinvocationPolicyType) {
	t.Helper()
	srv := httptest.NewTLSServer(m)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	url := srv.URL + "/mutate"
	none := regv1.SideEffectClassNone
	fail := regv1.Fail
	cfg := &regv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []regv1.MutatingWebhook{{
			Name:                    "foreign.e2e.graft.dev",
			ClientConfig:            regv1.WebhookClientConfig{URL: &url, CABundle: ca},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			ReinvocationPolicy:      &reinvocation,
			Rules:                   podCreateRules(),
			NamespaceSelector:       namespaceNamed(ns),
		}},
	}
	client := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := client.Create(t.Context(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("register foreign webhook: %v", err)
	}
	t.Cleanup(func() {
		// t.Context() is already canceled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := client.Delete(ctx, cfg.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("unregister foreign webhook: %v", err)
		}
	})
}

func podCreateRules() []regv1.RuleWithOperations {
	scope := regv1.NamespacedScope
	return []regv1.RuleWithOperations{{
		Operations: []regv1.OperationType{regv1.Create},
		Rule:       regv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope},
	}}
}

func namespaceNamed(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
}
