package registration

import (
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/guaranteecorpus"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/vapeval"
)

// BenchmarkGuaranteeFastPath evaluates deploy/base's guarantee of the
// default profile on a Pod graft injected (the matchCondition alone,
// false), beside the minimal policy make bench-e2e measures it against:
// one matchCondition reading object.spec.initContainers. In-process, with
// the API server's compiler and typed Pods; the API server's own figure
// is make bench-e2e's.
func BenchmarkGuaranteeFastPath(b *testing.B) {
	f, err := config.Load("../../deploy/base/config.yaml")
	if err != nil {
		b.Fatal(err)
	}
	rc, err := f.RevisionsConfig("../../deploy/base/templates")
	if err != nil {
		b.Fatal(err)
	}
	gs, err := Guarantees(rc, Options{})
	if err != nil {
		b.Fatal(err)
	}
	t := &testing.T{}
	r := newRigFor(t, rc)
	pod := guaranteecorpus.Store(r.inject(t, appPod(), "enabled", ""), true)
	floor := &admissionv1.ValidatingAdmissionPolicy{Spec: admissionv1.ValidatingAdmissionPolicySpec{
		MatchConditions: []admissionv1.MatchCondition{{Name: "reads-init-containers", Expression: `size(object.spec.?initContainers.orValue([])) < 0`}},
		Validations:     []admissionv1.Validation{{Expression: "true"}},
	}}
	for name, vap := range map[string]*admissionv1.ValidatingAdmissionPolicy{"graft": gs[0].Policy, "floor": floor} {
		p, err := vapeval.Compile(vap)
		if err != nil {
			b.Fatal(err)
		}
		req := vapeval.Request{Object: pod, Namespace: vapeval.NamespaceOf("apps", map[string]string{names.Inject: "enabled"})}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req.Object = pod.DeepCopy() // a fresh typed object per request, as the API server decodes one
				if v, err := req2(p, req); err != nil || v.Matched {
					b.Fatalf("%+v %v", v, err)
				}
			}
		})
	}
}

func req2(p *vapeval.Policy, r vapeval.Request) (vapeval.Verdict, error) { return p.Admit(r) }

var _ = corev1.Pod{}
