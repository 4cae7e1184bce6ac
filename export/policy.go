package export

import (
	"bytes"
	"fmt"
	"slices"

	regv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// Policies are the admission objects that inject a profile without graft.
type Policies struct {
	Mutating        *regv1.MutatingAdmissionPolicy
	MutatingBinding *regv1.MutatingAdmissionPolicyBinding
	// Validating holds the guarantee policy, and for a profile whose
	// invalid parameters fall back to defaults, a warning-only policy for
	// them; Bindings[i] binds Validating[i].
	Validating []*regv1.ValidatingAdmissionPolicy
	Bindings   []*regv1.ValidatingAdmissionPolicyBinding
}

// Export compiles profile into admission policies, or returns why it
// cannot: a *Refusal for each template construct it cannot compile.
func Export(cfg inject.Config, set *templates.Set, profileName string) (*Policies, error) {
	p, err := newProfile(cfg, set, profileName)
	if err != nil {
		return nil, err
	}
	name := "graft-" + p.name
	fast, err := p.fastPath()
	if err != nil {
		return nil, err
	}
	mvars, err := p.mutationVars()
	if err != nil {
		return nil, err
	}
	patch, err := p.patchExpr(fast)
	if err != nil {
		return nil, err
	}
	mconds := p.matchConditions()
	if fast != nil {
		// Not a Pod the policy leaves as it is: the API server evaluates
		// an IfNeeded policy again after every create it changed
		// (dispatcher.go marks the policies it ran for reinvocation when
		// the object is left changed, the changing one included), and
		// this condition is what spares that second evaluation.
		mconds = append(mconds, regv1.MatchCondition{Name: "not-injected", Expression: "!(" + fast.doneCondition() + ")"})
	}
	ignore, fail := regv1.Ignore, regv1.Fail
	reinvoke := regv1.IfNeededReinvocationPolicy
	out := &Policies{
		Mutating: &regv1.MutatingAdmissionPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"},
			ObjectMeta: p.meta(name),
			Spec: regv1.MutatingAdmissionPolicySpec{
				MatchConstraints: p.matchConstraints(),
				MatchConditions:  mconds,
				Variables:        variables(mvars),
				// An error leaves the Pod as it is; the guarantee policy
				// then refuses it, or the parameter check explains it.
				FailurePolicy:      &ignore,
				ReinvocationPolicy: reinvoke,
				Mutations: []regv1.Mutation{{
					PatchType: regv1.PatchTypeJSONPatch,
					JSONPatch: &regv1.JSONPatch{Expression: patch},
				}},
			},
		},
		MutatingBinding: &regv1.MutatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
			ObjectMeta: p.meta(name),
			Spec: regv1.MutatingAdmissionPolicyBindingSpec{
				PolicyName:     name,
				MatchResources: &regv1.MatchResources{NamespaceSelector: p.namespaceSelector()},
			},
		},
	}
	vvars, err := p.validationVars()
	if err != nil {
		return nil, err
	}
	checks := append(p.scopeChecks(), p.guaranteeChecks(name)...)
	problem := check{expr: `variables.problem == ""`, message: "variables.problem", reason: string(metav1.StatusReasonInvalid)}
	if p.lenient {
		problem.message = lenientMessage()
		// Only a Pod with a graft.dev/ annotation can have a parameter
		// problem: the others skip the evaluation (its variables, each
		// message expression, and a conversion of the Pod per set of
		// expressions) for the match conditions' one conversion.
		params := p.matchConstraints()
		conds := append(p.matchConditions(), regv1.MatchCondition{Name: "sets-graft-annotations",
			Expression: `object.metadata.?annotations.orValue({}).exists(k, k.startsWith(` + celString(names.Prefix) + `))`})
		out.add(p, name+"-params", vvars, []check{problem}, regv1.Warn, &fail, params, conds)
	} else {
		// One policy, the parameters checked first: a Pod with bad
		// parameters is refused for them, not for lacking its sidecars.
		checks = append([]check{problem}, checks...)
	}
	intact, err := p.intactCondition()
	if err != nil {
		return nil, err
	}
	out.add(p, name, vvars, checks, regv1.Deny, &fail, p.matchConstraints(), append(p.matchConditions(), intact))
	return out, nil
}

// intactCondition passes over a Pod the mutating policy injected and that
// still holds every container its record names: what the guarantee's
// last check asks, read from the object alone, before any variable. The
// API server converts the Pod for each set of expressions a validating
// policy evaluates (the validations, every message expression, even the
// empty audit annotations), so the match conditions' one conversion is
// all an injected Pod costs this policy. The mutating policy labels a Pod
// graft.dev/injected only when it injected it as the webhook does, and
// takes the label off a Pod this policy must refuse (a parameter problem,
// a conflict under onConflict: deny, a record or parameter it cannot
// merge), so the other checks hold for a labelled Pod: only one whose
// author wrote the label and a record by hand, and whose mutation then
// failed, passes unchecked, and only if its sidecars are the profile's.
func (p *profile) intactCondition() (regv1.MatchCondition, error) {
	initOK, err := SidecarExpr(p.sidecars, true)
	if err != nil {
		return regv1.MatchCondition{}, err
	}
	containerOK, err := SidecarExpr(p.sidecars, false)
	if err != nil {
		return regv1.MatchCondition{}, err
	}
	sidecarNames := SidecarNames(p.sidecars)
	status := "object.metadata.annotations[" + celString(names.Status) + "]"
	intact := celString(names.Injected) + " in object.metadata.?labels.orValue({}) && " +
		celString(names.Status) + " in object.metadata.?annotations.orValue({}) &&\n" +
		namesIn(status, "injected") + ".all(n, object.spec.?initContainers.orValue([]).exists(c, c.name == n) || " +
		"object.spec.?containers.orValue([]).exists(c, c.name == n)) &&\n" +
		// Every container under a sidecar's name is that sidecar as the
		// profile injects it: a copied label and record beside a forged
		// sidecar must reach the guarantee's checks.
		"object.spec.?initContainers.orValue([]).all(c, !(c.name in " + sidecarNames + ") || " + initOK + ") &&\n" +
		"object.spec.?containers.orValue([]).all(c, !(c.name in " + sidecarNames + ") || " + containerOK + ")"
	return regv1.MatchCondition{Name: "not-injected-intact", Expression: "!(" + intact + ")"}, nil
}

// validationVars are the ValidatingAdmissionPolicy's variables: the
// parameter checks, and what the scope checks and the guarantee read.
func (p *profile) validationVars() ([]celVar, error) {
	scope, err := p.scopeVars("", true)
	if err != nil {
		return nil, err
	}
	vars := append(p.selectionVars(), p.problemVars()...)
	vars = append(vars, scope...)
	guarantee, err := p.guaranteeVars()
	if err != nil {
		return nil, err
	}
	return append(vars, guarantee...), nil
}

func (p *profile) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: map[string]string{
		names.AppNameLabel:   names.AppName,
		names.ManagedByLabel: names.ExportManager,
		names.ExportProfile:  p.name,
	}}
}

func (out *Policies) add(p *profile, name string, vars []celVar, checks []check, action regv1.ValidationAction, fp *regv1.FailurePolicyType,
	match *regv1.MatchResources, conds []regv1.MatchCondition) {
	var vs []regv1.Validation
	for _, c := range checks {
		reason := metav1.StatusReason(c.reason)
		vs = append(vs, regv1.Validation{Expression: c.expr, MessageExpression: c.message, Reason: &reason})
	}
	out.Validating = append(out.Validating, &regv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: p.meta(name),
		Spec: regv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    fp,
			MatchConstraints: match,
			MatchConditions:  conds,
			Variables:        variables(vars),
			Validations:      vs,
		},
	})
	out.Bindings = append(out.Bindings, &regv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: p.meta(name),
		Spec: regv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []regv1.ValidationAction{action},
			MatchResources:    &regv1.MatchResources{NamespaceSelector: p.namespaceSelector()},
		},
	})
}

func variables(vs []celVar) []regv1.Variable {
	out := make([]regv1.Variable, len(vs))
	for i, v := range vs {
		out[i] = regv1.Variable{Name: v.name, Expression: v.expr}
	}
	return out
}

// matchConstraints: Pod CREATEs, except Pods opted out by label (the same
// objectSelector as the shipped webhook registration).
func (p *profile) matchConstraints() *regv1.MatchResources {
	equivalent := regv1.Equivalent
	return &regv1.MatchResources{
		ResourceRules: []regv1.NamedRuleWithOperations{{RuleWithOperations: regv1.RuleWithOperations{
			Operations: []regv1.OperationType{regv1.Create},
			Rule: regv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
				Scope: ptr(regv1.NamespacedScope)},
		}}},
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: names.Inject, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"false"}},
		}},
		MatchPolicy: &equivalent,
	}
}

// namespaceSelector selects the namespaces labelled for the profile (and,
// for the default profile, "enabled"), never the excluded ones.
func (p *profile) namespaceSelector() *metav1.LabelSelector {
	values := []string{p.name}
	if p.isDefault && p.name != names.EnabledValue {
		values = append(values, names.EnabledValue)
	}
	excluded := slices.Clone(p.excluded)
	if !slices.Contains(excluded, names.SystemNamespace) {
		excluded = append(excluded, names.SystemNamespace)
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: names.Inject, Operator: metav1.LabelSelectorOpIn, Values: values},
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: excluded},
	}}
}

// matchConditions skip the Pods graft skips: mirror Pods, Pods for another
// operating system (reason os), and hostNetwork Pods unless the profile
// injects them.
func (p *profile) matchConditions() []regv1.MatchCondition {
	out := []regv1.MatchCondition{{Name: "not-mirror-pod",
		Expression: `!("` + names.MirrorAnnotation + `" in object.metadata.?annotations.orValue({}))`},
		{Name: "linux-pod", Expression: "!(" + OtherOSExpr + ")"}}
	if !p.cfg.InjectHostNetwork {
		out = append(out, regv1.MatchCondition{Name: "not-host-network",
			Expression: "!object.spec.?hostNetwork.orValue(false)"})
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// YAML writes the objects as one YAML stream, bindings after their policy.
func (out *Policies) YAML() ([]byte, error) {
	objs := []any{out.Mutating, out.MutatingBinding}
	for i := range out.Validating {
		objs = append(objs, out.Validating[i], out.Bindings[i])
	}
	var b bytes.Buffer
	for i, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}
