package deploy

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// policyEvaluator runs a ValidatingAdmissionPolicy as the API server
// does, for one Pod: its objectSelector on the Pod's labels, then the CEL:
// matchConditions, variables (each may use the ones before it), then
// validations and, for a failed one, its messageExpression. The environment holds the CEL libraries Kubernetes
// gives admission policies since 1.30 that a policy may use here (the
// standard library, strings version 2, sets); the e2e suite runs the same
// policy in kube-apiserver itself.
type policyEvaluator struct {
	objects     labels.Selector
	conditions  []cel.Program
	variables   []namedProgram
	validations []checkedProgram
}

type namedProgram struct {
	name string
	prg  cel.Program
}

type checkedProgram struct {
	expr, message cel.Program
}

func newPolicyEvaluator(t *testing.T, vap admissionv1.ValidatingAdmissionPolicy) *policyEvaluator {
	t.Helper()
	env, err := cel.NewEnv(
		cel.Variable("object", cel.DynType),
		cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("request", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
	)
	if err != nil {
		t.Fatal(err)
	}
	compile := func(what, expr string) cel.Program {
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", what, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return prg
	}
	p := &policyEvaluator{objects: labels.Everything()}
	if mc := vap.Spec.MatchConstraints; mc != nil && mc.ObjectSelector != nil {
		if p.objects, err = metav1.LabelSelectorAsSelector(mc.ObjectSelector); err != nil {
			t.Fatalf("objectSelector: %v", err)
		}
	}
	for _, c := range vap.Spec.MatchConditions {
		p.conditions = append(p.conditions, compile("matchCondition "+c.Name, c.Expression))
	}
	for _, v := range vap.Spec.Variables {
		p.variables = append(p.variables, namedProgram{v.Name, compile("variable "+v.Name, v.Expression)})
	}
	for i, v := range vap.Spec.Validations {
		if v.MessageExpression == "" {
			t.Fatalf("validation %d has no messageExpression", i)
		}
		p.validations = append(p.validations, checkedProgram{
			compile(fmt.Sprintf("validation %d", i), v.Expression),
			compile(fmt.Sprintf("validation %d message", i), v.MessageExpression),
		})
	}
	return p
}

// verdict is what the policy makes of a Pod.
type verdict struct {
	matched bool   // selected, and every matchCondition held, so the validations ran
	denied  string // the message of the first failed validation, or ""
}

// evaluate runs the policy on pod (JSON) in a namespace labelled nsLabels.
func (p *policyEvaluator) evaluate(t *testing.T, pod string, nsLabels map[string]string) verdict {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(pod), &obj); err != nil {
		t.Fatalf("pod: %v", err)
	}
	meta, _ := obj["metadata"].(map[string]any)
	podLabels := labels.Set{}
	if l, ok := meta["labels"].(map[string]any); ok {
		for k, v := range l {
			podLabels[k], _ = v.(string)
		}
	}
	if !p.objects.Matches(podLabels) {
		return verdict{}
	}
	nsLabelValues := map[string]any{}
	for k, v := range nsLabels {
		nsLabelValues[k] = v
	}
	vars := map[string]any{}
	in := map[string]any{
		"object":          obj,
		"namespaceObject": map[string]any{"metadata": map[string]any{"name": meta["namespace"], "labels": nsLabelValues}},
		"request":         map[string]any{"namespace": meta["namespace"], "operation": "CREATE"},
		"variables":       vars,
	}
	eval := func(what string, prg cel.Program) any {
		out, _, err := prg.Eval(in)
		if err != nil {
			t.Fatalf("%s: %v\npod: %s", what, err, pod)
		}
		return out.Value()
	}
	for i, c := range p.conditions {
		if eval(fmt.Sprint("matchCondition ", i), c) != true {
			return verdict{}
		}
	}
	for _, v := range p.variables {
		vars[v.name] = eval("variable "+v.name, v.prg)
	}
	for i, v := range p.validations {
		if eval(fmt.Sprint("validation ", i), v.expr) != true {
			msg, _ := eval(fmt.Sprint("message ", i), v.message).(string)
			return verdict{matched: true, denied: msg}
		}
	}
	return verdict{matched: true}
}
