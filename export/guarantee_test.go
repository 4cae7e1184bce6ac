package export

import (
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/vapeval"
)

// TestGuaranteeRefusesForgedSidecars: the exported guarantee, run with
// kube-apiserver's CEL environment, admits a Pod graft injected and
// refuses one whose record (copied from it) claims a graft-proxy of the
// Pod's own: another image, or not a native sidecar.
func TestGuaranteeRefusesForgedSidecars(t *testing.T) {
	set := builtinSet(t)
	cfg := inject.DefaultConfig()
	pols, err := Export(cfg, set, "mesh-proxy")
	if err != nil {
		t.Fatal(err)
	}
	policy, err := vapeval.Compile(pols.Validating[0])
	if err != nil {
		t.Fatal(err)
	}
	engine, err := inject.New(cfg, set)
	if err != nil {
		t.Fatal(err)
	}
	app := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"apps"},"spec":{"containers":[{"name":"app","image":"app:1"}]}}`
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
		`"namespace":"apps","operation":"CREATE","object":` + app + `}}`
	resp, _, err := engine.Admit(nil, []byte(review), inject.Options{Profile: "mesh-proxy"})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Response struct{ Patch []byte } `json:"response"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(r.Response.Patch)
	if err != nil {
		t.Fatal(err)
	}
	injected, err := patch.Apply([]byte(app))
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(injected, &pod); err != nil {
		t.Fatal(err)
	}
	verdict := func(p *corev1.Pod) string {
		t.Helper()
		raw, _ := json.Marshal(p)
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			t.Fatal(err)
		}
		v, err := policy.Evaluate(obj, "apps", map[string]string{names.Inject: "mesh-proxy"})
		if err != nil {
			t.Fatal(err)
		}
		return v.Denied
	}
	if d := verdict(&pod); d != "" {
		t.Fatalf("the Pod graft injected is refused: %s", d)
	}
	for what, edit := range map[string]func(*corev1.Container){
		"another image": func(c *corev1.Container) { c.Image = "registry.invalid/not-envoy:1" },
		"not native":    func(c *corev1.Container) { c.RestartPolicy = nil },
	} {
		forged := pod.DeepCopy()
		for i := range forged.Spec.InitContainers {
			if forged.Spec.InitContainers[i].Name == "graft-proxy" {
				edit(&forged.Spec.InitContainers[i])
			}
		}
		if d := verdict(forged); !strings.Contains(d, "init container graft-proxy (image ") || !strings.Contains(d, "is not the sidecar profile mesh-proxy injects") {
			t.Errorf("%s: refused %q, want the forged sidecar named", what, d)
		}
	}
}
