// Package vapeval runs a ValidatingAdmissionPolicy on one Pod request the
// way kube-apiserver 1.37 does, for tests that cannot afford an API
// server per case. It compiles the policy with the plugin's own compiler
// (k8s.io/apiserver's ValidatingAdmissionPolicy: its environment, its
// composition of variables, its match-condition matcher and validator)
// and hands it the typed Pod, which 1.37 reads lazily without converting
// it to unstructured form. So a field's presence, a quantity's spelling,
// a message with a newline (dropped) or an evaluation error (the failure
// policy) behave as in the API server; only the selection (namespace and
// object selectors, resource rules) is done here, by the same label
// selector code. The e2e suite runs the same policies in kube-apiserver
// itself.
package vapeval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Policy is a compiled ValidatingAdmissionPolicy.
type Policy struct {
	name                string
	namespaces, objects labels.Selector
	rules               []admissionv1.NamedRuleWithOperations
	// bindings select further, each by its matchResources: a request is
	// selected by one of them (or by the policy alone, without any).
	bindings    []binding
	matcher     matchconditions.Matcher
	validations plugincel.ConditionEvaluator
	messages    plugincel.ConditionEvaluator
	checks      []admissionv1.Validation
}

// Compile compiles vap's CEL as the API server's plugin does
// (k8s.io/apiserver's validating.compilePolicy, whose package this one
// does not import for the server dependencies it drags in): variables
// composed lazily, matchConditions with them, validations and
// messageExpressions.
func Compile(vap *admissionv1.ValidatingAdmissionPolicy) (*Policy, error) {
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return nil, err
	}
	vars := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	var named []plugincel.NamedExpressionAccessor
	for _, v := range vap.Spec.Variables {
		named = append(named, &variable{name: v.Name, expr: v.Expression})
	}
	for _, v := range named {
		// As CompileAndStoreVariables does, one by one, to report the
		// first that does not compile: the API server refuses the policy.
		if r := compiler.CompileAndStoreVariable(v, vars, environment.StoredExpressions); r.Error != nil {
			return nil, fmt.Errorf("variable %s: %s", v.GetName(), r.Error.Detail)
		}
	}
	p := &Policy{name: vap.Name, namespaces: labels.Everything(), objects: labels.Everything(), checks: vap.Spec.Validations}
	if mcs := vap.Spec.MatchConditions; len(mcs) > 0 {
		accessors := make([]plugincel.ExpressionAccessor, len(mcs))
		for i := range mcs {
			accessors[i] = (*matchconditions.MatchCondition)(&mcs[i])
		}
		p.matcher = matchconditions.NewMatcher(compiler.CompileCondition(accessors, vars, environment.StoredExpressions),
			vap.Spec.FailurePolicy, "policy", "validate", vap.Name)
	}
	var validations, messages []plugincel.ExpressionAccessor
	for _, v := range vap.Spec.Validations {
		validations = append(validations, &expression{expr: v.Expression, types: []*cel.Type{cel.BoolType}})
		var m plugincel.ExpressionAccessor
		if v.MessageExpression != "" {
			m = &expression{expr: v.MessageExpression, types: []*cel.Type{cel.StringType}}
		}
		messages = append(messages, m)
	}
	p.validations = compiler.CompileCondition(validations, vars, environment.StoredExpressions)
	p.messages = compiler.CompileCondition(messages, plugincel.OptionalVariableDeclarations{}, environment.StoredExpressions)
	// The API server refuses to store a policy that does not compile;
	// this reports it rather than failing every request.
	if err := compileErrors(compiler, vap); err != nil {
		return nil, err
	}
	if mc := vap.Spec.MatchConstraints; mc != nil {
		p.rules = mc.ResourceRules
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
	return p, nil
}

type binding struct{ namespaces, objects labels.Selector }

// Bind adds binding b's selection: once bound, the policy selects a
// request only where one of its bindings does, as the API server runs a
// policy once per binding that matches.
func (p *Policy) Bind(b *admissionv1.ValidatingAdmissionPolicyBinding) error {
	bd := binding{namespaces: labels.Everything(), objects: labels.Everything()}
	if mr := b.Spec.MatchResources; mr != nil {
		var err error
		if mr.NamespaceSelector != nil {
			if bd.namespaces, err = metav1.LabelSelectorAsSelector(mr.NamespaceSelector); err != nil {
				return fmt.Errorf("binding %s: %w", b.Name, err)
			}
		}
		if mr.ObjectSelector != nil {
			if bd.objects, err = metav1.LabelSelectorAsSelector(mr.ObjectSelector); err != nil {
				return fmt.Errorf("binding %s: %w", b.Name, err)
			}
		}
	}
	p.bindings = append(p.bindings, bd)
	return nil
}

// expression is a validation's or message's CEL and its result types.
type expression struct {
	expr  string
	types []*cel.Type
}

func (e *expression) GetExpression() string    { return e.expr }
func (e *expression) ReturnTypes() []*cel.Type { return e.types }

type variable struct{ name, expr string }

func (v *variable) GetExpression() string    { return v.expr }
func (v *variable) ReturnTypes() []*cel.Type { return []*cel.Type{cel.AnyType, cel.DynType} }
func (v *variable) GetName() string          { return v.name }

// compileErrors compiles every expression of vap once more, one by one,
// to report the first that does not compile with its name.
func compileErrors(compiler *plugincel.CompositedCompiler, vap *admissionv1.ValidatingAdmissionPolicy) error {
	vars := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	check := func(what string, a plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations) error {
		r := compiler.CompileCELExpression(a, opts, environment.StoredExpressions)
		if r.Error != nil {
			return fmt.Errorf("%s: %s", what, r.Error.Detail)
		}
		return nil
	}
	for i := range vap.Spec.MatchConditions {
		mc := &vap.Spec.MatchConditions[i]
		if err := check("matchCondition "+mc.Name, (*matchconditions.MatchCondition)(mc), vars); err != nil {
			return err
		}
	}
	for i, v := range vap.Spec.Validations {
		if err := check(fmt.Sprintf("validation %d", i), &expression{expr: v.Expression, types: []*cel.Type{cel.BoolType}}, vars); err != nil {
			return err
		}
		if v.MessageExpression != "" {
			if err := check(fmt.Sprintf("validation %d message", i), &expression{expr: v.MessageExpression, types: []*cel.Type{cel.StringType}},
				plugincel.OptionalVariableDeclarations{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Verdict is what a policy makes of one request.
type Verdict struct {
	// Selected: the resource rules and the namespace and object selectors
	// select it.
	Selected bool
	// Matched: selected, and every matchCondition held, so the
	// validations ran.
	Matched bool
	// Denied is the message of the first failed validation, or "".
	Denied string
}

// Request is one admission request for a Pod.
type Request struct {
	// Operation is CREATE (the default) or UPDATE.
	Operation admission.Operation
	// SubResource is "" or "ephemeralcontainers".
	SubResource string
	Object      *corev1.Pod
	// OldObject is the stored Pod, for UPDATE.
	OldObject *corev1.Pod
	// Namespace is the Pod's namespace object (its labels).
	Namespace *corev1.Namespace
}

// Evaluate runs the policy on obj (a Pod, as JSON decodes it) created in
// namespace ns with labels nsLabels.
func (p *Policy) Evaluate(obj map[string]any, ns string, nsLabels map[string]string) (Verdict, error) {
	pod, err := PodOf(obj)
	if err != nil {
		return Verdict{}, err
	}
	return p.Admit(Request{Object: pod, Namespace: NamespaceOf(ns, nsLabels)})
}

// Admit runs the policy on r.
func (p *Policy) Admit(r Request) (Verdict, error) {
	if r.Operation == "" {
		r.Operation = admission.Create
	}
	if r.Namespace == nil || r.Object == nil {
		return Verdict{}, fmt.Errorf("vapeval: a request needs a Pod and its namespace")
	}
	if !p.selects(r) {
		return Verdict{}, nil
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	obj := r.Object.DeepCopy()
	obj.Namespace = r.Namespace.Name
	var old runtime.Object
	if r.OldObject != nil {
		o := r.OldObject.DeepCopy()
		o.Namespace = r.Namespace.Name
		old = o
	}
	attrs := admission.NewAttributesRecord(obj, old, gvk, r.Namespace.Name, obj.Name, gvr, r.SubResource, r.Operation, nil, false,
		&user.DefaultInfo{Name: "vapeval"})
	versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk,
		VersionedObject: admission.NewLazyObject(obj), VersionedOldObject: admission.NewLazyObject(old)}
	if old == nil {
		versioned.VersionedOldObject = admission.NewLazyObject(nil)
	}
	return p.validate(versioned, gvr, r.Namespace)
}

// validate is the validator's work (validating.validator.Validate): the
// matchConditions, then the validations, each failed one's message
// expression, its static message or the expression itself.
func (p *Policy) validate(versioned *admission.VersionedAttributes, gvr schema.GroupVersionResource, ns *corev1.Namespace) (Verdict, error) {
	ctx := context.Background()
	if p.matcher != nil {
		m := p.matcher.Match(ctx, versioned, nil, nil)
		if m.Error != nil {
			return Verdict{Selected: true}, fmt.Errorf("policy %s: %w", p.name, m.Error)
		}
		if !m.Matches {
			return Verdict{Selected: true}, nil
		}
	}
	req := plugincel.CreateAdmissionRequest(versioned.Attributes, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(versioned.VersionedKind))
	nsObj := plugincel.CreateNamespaceObject(ns)
	results, remaining, err := p.validations.ForInput(ctx, versioned, req, plugincel.OptionalVariableBindings{}, nsObj, celconfig.RuntimeCELCostBudget)
	if err != nil {
		return Verdict{Selected: true, Matched: true}, fmt.Errorf("policy %s: %w", p.name, err)
	}
	msgs, _, msgErr := p.messages.ForInput(ctx, versioned, req, plugincel.OptionalVariableBindings{}, nsObj, remaining)
	v := Verdict{Selected: true, Matched: true}
	for i, r := range results {
		if r.Error != nil {
			return v, fmt.Errorf("policy %s: validation %d: %w", p.name, i, r.Error)
		}
		if r.EvalResult == celtypes.True {
			continue
		}
		if errors.Is(msgErr, apiservercel.ErrInternal) || errors.Is(msgErr, apiservercel.ErrOutOfBudget) {
			return v, fmt.Errorf("policy %s: failed messageExpression: %w", p.name, msgErr)
		}
		msg := ""
		if i < len(msgs) && msgs[i].Error == nil && msgs[i].EvalResult != nil {
			if s, ok := msgs[i].EvalResult.Value().(string); ok {
				msg = strings.TrimSpace(s)
				// The API server drops an overlong or multi-line message.
				if len(msg) > celconfig.MaxEvaluatedMessageExpressionSizeBytes || strings.Contains(msg, "\n") {
					msg = ""
				}
			}
		}
		if msg == "" {
			msg = strings.TrimSpace(p.checks[i].Message)
		}
		if msg == "" {
			msg = "failed expression: " + strings.TrimSpace(p.checks[i].Expression)
		}
		if v.Denied == "" {
			v.Denied = msg
		}
	}
	return v, nil
}

// selects: the resource rules, the namespace and object selectors.
func (p *Policy) selects(r Request) bool {
	resource := "pods"
	if r.SubResource != "" {
		resource += "/" + r.SubResource
	}
	ruled := len(p.rules) == 0
	for _, rule := range p.rules {
		ops := rule.Operations
		if (slices.Contains(ops, admissionv1.OperationAll) || slices.Contains(ops, admissionv1.OperationType(r.Operation))) &&
			(slices.Contains(rule.Resources, resource) || slices.Contains(rule.Resources, "*") || r.SubResource != "" && slices.Contains(rule.Resources, "pods/*")) {
			ruled = true
		}
	}
	nsLabels := labels.Set{"kubernetes.io/metadata.name": r.Namespace.Name}
	for k, v := range r.Namespace.Labels {
		nsLabels[k] = v
	}
	objLabels := labels.Set(r.Object.Labels)
	bound := len(p.bindings) == 0
	for _, b := range p.bindings {
		bound = bound || b.namespaces.Matches(nsLabels) && b.objects.Matches(objLabels)
	}
	return ruled && bound && p.namespaces.Matches(nsLabels) && p.objects.Matches(objLabels)
}

// PodOf decodes a Pod from its JSON form, as the API server does.
func PodOf(obj map[string]any) (*corev1.Pod, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var pod corev1.Pod
	if err := json.Unmarshal(b, &pod); err != nil {
		return nil, fmt.Errorf("vapeval: not a Pod: %w", err)
	}
	return &pod, nil
}

// NamespaceOf is namespace ns with labels (and its name label).
func NamespaceOf(ns string, nsLabels map[string]string) *corev1.Namespace {
	l := map[string]string{"kubernetes.io/metadata.name": ns}
	for k, v := range nsLabels {
		l[k] = v
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: l}}
}
