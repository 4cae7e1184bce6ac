// Package vapeval runs a ValidatingAdmissionPolicy on one object the way
// kube-apiserver 1.36 does, for tests that cannot afford an API server
// per case: the namespace and object selectors, then the matchConditions
// (which see neither namespaceObject nor variables), the variables, the
// validations and, for each that fails, its messageExpression. The CEL
// environment is the API server's own (k8s.io/apiserver's base
// environment for 1.36), so the policy's functions behave as they do
// there; the e2e suite runs the same policies in kube-apiserver itself.
package vapeval

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Policy is a compiled ValidatingAdmissionPolicy.
type Policy struct {
	namespaces, objects labels.Selector
	conditions          []cel.Program
	variables           []namedProgram
	validations         []validation
}

type namedProgram struct {
	name string
	prg  cel.Program
}

type validation struct {
	expr, message cel.Program
	static        string
}

// Compile compiles vap's CEL with the API server's environment.
func Compile(vap *admissionv1.ValidatingAdmissionPolicy) (*Policy, error) {
	base, err := environment.MustBaseEnvSet(version.MajorMinor(1, 36)).Env(environment.StoredExpressions)
	if err != nil {
		return nil, err
	}
	vars := []cel.EnvOption{
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
		cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("request", cel.DynType),
	}
	// matchConditions are compiled without variables, as the API server
	// does.
	condEnv, err := base.Extend(vars...)
	if err != nil {
		return nil, err
	}
	env, err := base.Extend(append(vars, cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)))...)
	if err != nil {
		return nil, err
	}
	compile := func(env *cel.Env, what, expr string) (cel.Program, error) {
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			return nil, fmt.Errorf("%s: %w", what, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return prg, nil
	}
	p := &Policy{namespaces: labels.Everything(), objects: labels.Everything()}
	if mc := vap.Spec.MatchConstraints; mc != nil {
		if mc.NamespaceSelector != nil {
			if p.namespaces, err = metav1.LabelSelectorAsSelector(mc.NamespaceSelector); err != nil {
				return nil, fmt.Errorf("namespaceSelector: %w", err)
			}
		}
		if mc.ObjectSelector != nil {
			if p.objects, err = metav1.LabelSelectorAsSelector(mc.ObjectSelector); err != nil {
				return nil, fmt.Errorf("objectSelector: %w", err)
			}
		}
	}
	for _, c := range vap.Spec.MatchConditions {
		prg, err := compile(condEnv, "matchCondition "+c.Name, c.Expression)
		if err != nil {
			return nil, err
		}
		p.conditions = append(p.conditions, prg)
	}
	for _, v := range vap.Spec.Variables {
		prg, err := compile(env, "variable "+v.Name, v.Expression)
		if err != nil {
			return nil, err
		}
		p.variables = append(p.variables, namedProgram{v.Name, prg})
	}
	for i, v := range vap.Spec.Validations {
		val := validation{static: v.Message}
		if val.expr, err = compile(env, fmt.Sprintf("validation %d", i), v.Expression); err != nil {
			return nil, err
		}
		if v.MessageExpression != "" {
			if val.message, err = compile(env, fmt.Sprintf("validation %d message", i), v.MessageExpression); err != nil {
				return nil, err
			}
		}
		p.validations = append(p.validations, val)
	}
	return p, nil
}

// Verdict is what a policy makes of one object.
type Verdict struct {
	// Selected: the namespace and object selectors select it.
	Selected bool
	// Matched: selected, and every matchCondition held, so the
	// validations ran.
	Matched bool
	// Denied is the message of the first failed validation, or "".
	Denied string
}

// Evaluate runs the policy on obj (a Pod, as JSON decodes it) created in
// namespace ns with labels nsLabels.
func (p *Policy) Evaluate(obj map[string]any, ns string, nsLabels map[string]string) (Verdict, error) {
	meta, _ := obj["metadata"].(map[string]any)
	objLabels := labels.Set{}
	if l, ok := meta["labels"].(map[string]any); ok {
		for k, v := range l {
			objLabels[k], _ = v.(string)
		}
	}
	all := labels.Set{"kubernetes.io/metadata.name": ns}
	for k, v := range nsLabels {
		all[k] = v
	}
	if !p.namespaces.Matches(all) || !p.objects.Matches(objLabels) {
		return Verdict{}, nil
	}
	nsValues := map[string]any{}
	for k, v := range all {
		nsValues[k] = v
	}
	request := map[string]any{"namespace": ns, "operation": "CREATE",
		"kind": map[string]any{"group": "", "version": "v1", "kind": "Pod"}}
	in := map[string]any{"object": obj, "oldObject": nil, "request": request, "namespaceObject": nil}
	for i, c := range p.conditions {
		out, _, err := c.Eval(in)
		if err != nil {
			return Verdict{}, fmt.Errorf("matchCondition %d: %w", i, err)
		}
		if out.Value() != true {
			return Verdict{Selected: true}, nil
		}
	}
	vars := map[string]any{}
	in["namespaceObject"] = map[string]any{"metadata": map[string]any{"name": ns, "labels": nsValues}}
	in["variables"] = vars
	for _, v := range p.variables {
		out, _, err := v.prg.Eval(in)
		if err != nil {
			return Verdict{}, fmt.Errorf("variable %s: %w", v.name, err)
		}
		vars[v.name] = out
	}
	for i, v := range p.validations {
		out, _, err := v.expr.Eval(in)
		if err != nil {
			return Verdict{}, fmt.Errorf("validation %d: %w", i, err)
		}
		if out.Value() == true {
			continue
		}
		msg := strings.TrimSpace(v.static)
		if v.message != nil {
			m, _, err := v.message.Eval(in)
			if err != nil {
				return Verdict{}, fmt.Errorf("validation %d message: %w", i, err)
			}
			s, ok := m.Value().(string)
			if !ok {
				return Verdict{}, fmt.Errorf("validation %d message is %T", i, m.Value())
			}
			msg = strings.TrimSpace(s)
		}
		if msg == "" {
			return Verdict{}, errors.New("a failed validation without a message")
		}
		if strings.Contains(msg, "\n") {
			return Verdict{}, fmt.Errorf("validation %d message has a newline, which the API server drops: %q", i, msg)
		}
		return Verdict{Selected: true, Matched: true, Denied: msg}, nil
	}
	return Verdict{Selected: true, Matched: true}, nil
}
