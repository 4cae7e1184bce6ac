package registration

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/imageref"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// PolicyName names profile's guarantee policy and its binding, for graft's
// Service service: <service>-injection-required-<profile>.
func PolicyName(service, profile string) string { return service + "-injection-required-" + profile }

// Guarantee is the final-state check of one profile: a
// ValidatingAdmissionPolicy and its binding.
type Guarantee struct {
	Profile string
	Policy  *admissionv1.ValidatingAdmissionPolicy
	Binding *admissionv1.ValidatingAdmissionPolicyBinding
}

// sidecar is what a profile's guarantee accepts for one container name.
type sidecar struct {
	// Template is the template that adds it.
	Template string `json:"template"`
	// Kinds it may be added as.
	Kinds []string `json:"kind"`
	// Images it may run: exact images, and prefixes ending in "*" ("*":
	// any image).
	Images []string `json:"image"`
}

// profileSpec is what one profile's guarantee is generated from, over
// every revision graft serves.
type profileSpec struct {
	name string
	// templates: a Pod without graft.dev/templates gets these.
	templates []string
	sidecars  map[string]*sidecar
	// hostNetworkSkipped and keep say, per graft.dev/rev value ("" for
	// none), whether a revision that value may choose leaves hostNetwork
	// Pods alone, or keeps a Pod's own container named like a sidecar
	// (onConflict: keep).
	hostNetworkSkipped, keep map[string]bool
	// podRevision: a Pod's own graft.dev/rev label may choose.
	podRevision bool
}

// guaranteeInput is what every profile's policy shares.
type guaranteeInput struct {
	profiles  []*profileSpec // the default profile first
	revisions []string
	tags      []string
	excluded  []string
	graftNS   string
	service   string
}

// Guarantees returns, for every profile of rc, the policy that refuses a
// Pod left without what graft injects, or carrying containers under
// graft's names that graft did not inject. The default revision's default
// profile comes first.
func Guarantees(rc inject.RevisionsConfig, o Options) ([]Guarantee, error) {
	o.defaults()
	in, err := guaranteeData(rc, o)
	if err != nil {
		return nil, err
	}
	var out []Guarantee
	for _, p := range in.profiles {
		g, err := in.guarantee(p)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", p.name, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// guaranteeData renders every revision's templates for every profile.
func guaranteeData(rc inject.RevisionsConfig, o Options) (*guaranteeInput, error) {
	if len(rc.Revisions) == 0 {
		return nil, fmt.Errorf("guarantee: no revisions")
	}
	in := &guaranteeInput{graftNS: o.Namespace, service: o.Service}
	for _, t := range rc.Tags {
		in.tags = append(in.tags, t.Name)
	}
	byName := map[string]*profileSpec{}
	cfgs := map[string]inject.Config{}
	for _, r := range rc.Revisions {
		// The engine validates the configuration as graft serve would.
		if _, err := inject.New(r.Config, r.Templates); err != nil {
			return nil, fmt.Errorf("revision %s: %w", cmp.Or(r.Config.Revision, inject.DefaultRevision), err)
		}
		cfg, err := r.Config.Defaulted()
		if err != nil {
			return nil, err
		}
		if len(in.revisions) == 0 {
			in.excluded = slices.Clone(cfg.ExcludedNamespaces)
			if !slices.Contains(in.excluded, o.Namespace) {
				in.excluded = append(in.excluded, o.Namespace)
			}
		}
		cfgs[cfg.Revision] = cfg
		in.revisions = append(in.revisions, cfg.Revision)
		facts := map[string]TemplateFacts{}
		for _, pn := range slices.Sorted(maps.Keys(cfg.Profiles)) {
			p := cfg.Profiles[pn]
			ps := byName[pn]
			if ps == nil {
				if err := checkProfileName(pn); err != nil {
					return nil, err
				}
				ps = &profileSpec{name: pn, sidecars: map[string]*sidecar{}, hostNetworkSkipped: map[string]bool{}, keep: map[string]bool{}}
				byName[pn] = ps
			}
			ps.podRevision = ps.podRevision || p.PodRevision
			for _, tn := range p.Templates {
				ps.templates = appendNew(ps.templates, tn)
			}
			for _, tn := range union(p.Templates, p.AllowedTemplates) {
				tmpl, _ := r.Templates.Get(tn) // inject.New checked every name
				tf, ok := facts[tn]
				if !ok {
					if tf, err = Facts(tmpl); err != nil {
						return nil, fmt.Errorf("revision %s: %w", cfg.Revision, err)
					}
					facts[tn] = tf
				}
				if err := ps.add(&p, tmpl, tf); err != nil {
					return nil, fmt.Errorf("revision %s: profile %s: %w", cfg.Revision, pn, err)
				}
			}
		}
		if len(in.profiles) == 0 {
			in.profiles = append(in.profiles, byName[cfg.DefaultProfile])
		}
	}
	for _, pn := range slices.Sorted(maps.Keys(byName)) {
		if pn != in.profiles[0].name {
			in.profiles = append(in.profiles, byName[pn])
		}
	}
	// What each graft.dev/rev value may choose: a revision, a tag's
	// revisions, and for no label the default.
	targets := map[string][]string{"": revisionTargets(rc, rc.Default)}
	for _, r := range in.revisions {
		targets[r] = []string{r}
	}
	for _, t := range in.tags {
		targets[t] = revisionTargets(rc, t)
	}
	for _, ps := range in.profiles {
		for label, revs := range targets {
			for _, r := range revs {
				p := cfgs[r].Profiles[ps.name]
				ps.hostNetworkSkipped[label] = ps.hostNetworkSkipped[label] || !p.InjectHostNetwork
				ps.keep[label] = ps.keep[label] || p.OnConflict == inject.ConflictKeep
			}
		}
	}
	return in, nil
}

// revisionTargets are the revisions a graft.dev/rev value (a revision or
// a tag; empty: the first revision) may choose.
func revisionTargets(rc inject.RevisionsConfig, name string) []string {
	if name == "" {
		return []string{cmp.Or(rc.Revisions[0].Config.Revision, inject.DefaultRevision)}
	}
	for _, t := range rc.Tags {
		if t.Name != name {
			continue
		}
		var out []string
		for _, s := range t.Split {
			if s.Percent > 0 {
				out = append(out, s.Revision)
			}
		}
		return out
	}
	return []string{name}
}

// add records what template tmpl (its facts tf) may add to Pods of
// profile p: its containers, each running the template's own images, the
// profile's value of an image parameter, and, where a Pod's annotation
// may set that parameter, any image the profile allows.
func (ps *profileSpec) add(p *inject.Profile, tmpl *templates.Template, tf TemplateFacts) error {
	// What a Pod's annotation may choose: any image, or one the
	// profile's allowedImages admit, each entry up to a boundary
	// (imageref.Expand, the engine's rule).
	chosen := []string{"*"}
	if allowed := p.AllowedImages; len(allowed) > 0 {
		chosen = nil
		for _, a := range allowed {
			exact, prefixes := imageref.Expand(a)
			if exact != "" {
				chosen = append(chosen, exact)
			}
			for _, pre := range prefixes {
				chosen = append(chosen, pre+"*")
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(tf.Containers)) {
		cf := tf.Containers[name]
		s := ps.sidecars[name]
		if s == nil {
			s = &sidecar{Template: tmpl.Name}
			ps.sidecars[name] = s
		}
		if s.Template != tmpl.Name {
			return fmt.Errorf("container %s is injected by templates %s and %s", name, s.Template, tmpl.Name)
		}
		s.Kinds = union(s.Kinds, cf.Kinds)
		s.Images = union(s.Images, cf.Images)
		for _, param := range cf.ImageParams {
			v, ok := p.Params[tmpl.Name][param]
			if !ok {
				v = tf.ImageDefaults[param]
			}
			s.Images = appendNew(s.Images, v)
			if !locked(p, tmpl.Name, param) {
				s.Images = union(s.Images, chosen)
			}
		}
		if cf.ImageFollows {
			s.Images = union(s.Images, chosen)
		}
		slices.Sort(s.Kinds)
		slices.Sort(s.Images)
	}
	return nil
}

// guarantee builds profile p's policy and binding.
func (in *guaranteeInput) guarantee(p *profileSpec) (Guarantee, error) {
	name := PolicyName(in.service, p.name)
	meta := metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "graft"}}
	data, err := in.celData(p)
	if err != nil {
		return Guarantee{}, err
	}
	spec, err := fill(data)
	if err != nil {
		return Guarantee{}, err
	}
	spec.FailurePolicy = ptr(admissionv1.Fail)
	spec.MatchConstraints = &admissionv1.MatchResources{
		ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: []admissionv1.OperationType{admissionv1.Create},
			Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
				Scope: ptr(admissionv1.NamespacedScope)},
		}}},
		MatchPolicy: ptr(admissionv1.Equivalent),
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: names.Inject, Operator: metav1.LabelSelectorOpIn, Values: []string{p.name}},
			{Key: names.NamespaceNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: in.excluded},
		}},
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: names.Inject, Operator: metav1.LabelSelectorOpNotIn, Values: []string{names.OptOutValue}},
		}},
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: meta,
		Spec:       *spec,
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: meta,
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return Guarantee{Profile: p.name, Policy: policy, Binding: binding}, nil
}

// sortedKeys is m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// celJSON writes v as JSON, which for strings, bools, lists and maps is
// also a CEL literal (CEL reads JSON's string escapes the same way). It
// is encoding/json's form, as Helm's toJson writes it too.
func celJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("guarantee: %w", err)
	}
	return string(b), nil
}
