package registration

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/graftdev/graft/internal/guaranteecorpus"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/vapeval"
)

// policyJudge is the guarantee policy as a judge of "graft's container":
// a Pod whose only difference from graft's is in the container named is
// admitted exactly when that container is graft's.
type policyJudge struct {
	t *testing.T
	r *rig
}

func (j policyJudge) Graft(pod *corev1.Pod, profile, rev, name string) (bool, string, error) {
	v := j.r.check(j.t, pod, profile, rev)
	return v.Denied == "", v.Denied, nil
}

// TestGuaranteeAgreesWithDefinition: for random Pods graft injected with
// random profiles, parameters and graft.dev/rev values, and a random edit
// to one of graft's containers, the policy says "graft's" exactly when the
// definition does (guaranteecorpus.Edit.Graft), and otherwise names the
// container; on UPDATE, an image swapped (the one change a Pod UPDATE can
// make to a container) is refused and an unchanged Pod passes. Judges
// lists who is held to it: the webhook's judge joins the policy's where
// the engine exposes its comparison (internal/guaranteecorpus.Judge).
func TestGuaranteeAgreesWithDefinition(t *testing.T) {
	r := newRig(t, guaranteeYAML)
	judges := map[string]guaranteecorpus.Judge{"policy": policyJudge{t, r}}
	annotations := [][]string{
		nil,
		{names.ParamAnnotation("mesh-proxy", "concurrency"), "4"},
		{names.Templates, "mesh-proxy,otel-agent"},
		{names.Templates, "secrets-agent,mesh-proxy", names.ParamAnnotation("secrets-agent", "templateFormat"), "yaml"},
		{names.ParamAnnotation("mesh-proxy", "trafficRedirect"), "init-container"},
	}
	profiles := []string{"mesh", "agent", "pinned", "prefixed", "lenient"}
	iterations := 60
	if testing.Short() {
		iterations = 15
	}
	for seed := range uint64(3) {
		rnd := rand.New(rand.NewPCG(seed, 32))
		for i := range iterations {
			profile := profiles[rnd.IntN(len(profiles))]
			rev := revLabels[rnd.IntN(len(revLabels))]
			pod := guaranteecorpus.Pod(rnd)
			if profile == "mesh" {
				pod = withAnnotations(pod, annotations[rnd.IntN(len(annotations))]...)
			}
			injected := guaranteecorpus.Store(r.inject(t, pod, profile, rev), rnd.IntN(4) > 0)
			var graftNames []string
			for _, c := range append(injected.Spec.InitContainers, injected.Spec.Containers...) {
				if strings.HasPrefix(c.Name, "graft-") {
					graftNames = append(graftNames, c.Name)
				}
			}
			name := graftNames[rnd.IntN(len(graftNames))]
			e := guaranteecorpus.Random(rnd)
			edited := edit(injected, name, e.Apply)
			what := fmt.Sprintf("seed %d #%d: profile %s, rev %q, %s on %s", seed, i, profile, rev, e.Name, name)
			for jn, j := range judges {
				if graft, why, err := j.Graft(injected, profile, rev, name); err != nil || !graft {
					t.Fatalf("%s: %s: graft's own Pod not graft's: %q %v", what, jn, why, err)
				}
				graft, why, err := j.Graft(edited, profile, rev, name)
				switch {
				case err != nil:
					t.Fatalf("%s: %s: %v", what, jn, err)
				case graft != e.Graft():
					t.Errorf("%s: %s says graft's %v (%q), the definition %v", what, jn, graft, why, e.Graft())
				case !graft && !strings.Contains(why, name):
					t.Errorf("%s: %s: the refusal does not name %s: %q", what, jn, name, why)
				}
			}
			// UPDATE: only the image can change.
			swapped := edit(injected, name, func(_ *corev1.Pod, c *corev1.Container) { c.Image = "registry.example/evil:1" })
			v := r.request(t, vapeval.Request{Operation: admission.Update, OldObject: injected, Object: swapped}, profile, rev, false)
			wantDenied(t, what+", UPDATE swapping the image", v, name, "field image")
			if v := r.request(t, vapeval.Request{Operation: admission.Update, OldObject: edited, Object: withLabel(edited, "x", "y")}, profile, rev, false); v.Denied != "" {
				t.Errorf("%s: a label edit of a Pod admitted before: denied %q", what, v.Denied)
			}
		}
	}
}

func withLabel(p *corev1.Pod, k, v string) *corev1.Pod {
	p = p.DeepCopy()
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}
