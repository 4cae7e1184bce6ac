package registration

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/graftdev/graft/export"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
)

// The guarantee: per profile, ValidatingAdmissionPolicies that refuse a
// Pod leaving admission without graft's sidecars as graft renders them
// for it, or with a container under one of graft's names that is not
// graft's (docs/concepts/guarantee.md says what they check and why).
//
// What a template renders is compiled once per template by export
// (export.Checks: CEL conditions with markers where parameter values
// go). The policies are assembled from those and the configuration by
// guarantee.tpl, a Go template the Helm chart runs too
// (deploy/helm/graft/templates/_guarantee.tpl is a copy, `make
// chart-files`): the generator and the chart cannot drift, and `go test
// ./deploy` holds them to the same objects. The template sees data as
// Helm's templates see values (JSON types), and the functions Helm gives
// them (sprig, toJson, fromJson, include, fail).

//go:embed guarantee.tpl
var guaranteeTemplate string

// GuaranteeTemplate is guarantee.tpl, which the Helm chart carries.
func GuaranteeTemplate() string { return guaranteeTemplate }

// PolicyName names the guarantee policy of profile for graft's Service
// service, for namespaces without graft.dev/rev: <service>-injection-required-<profile>.
func PolicyName(service, profile string) string { return service + "-injection-required-" + profile }

// RevisionPolicyName names the policy of profile for namespaces labelled
// graft.dev/rev=<revision>, where graft serves several revisions.
func RevisionPolicyName(service, profile, revision string) string {
	return PolicyName(service, profile) + "." + revision
}

// UnknownRevisionPolicyName names the policy that refuses the Pods of
// namespaces whose graft.dev/rev names neither a revision nor a tag.
func UnknownRevisionPolicyName(service string) string {
	return service + "-injection-required-known-revision"
}

// Guarantee is one policy and its bindings.
type Guarantee struct {
	// Profile is the profile it guarantees ("" for the unknown-revision
	// policy); Revisions are the revisions it accepts.
	Profile   string
	Revisions []string
	Policy    *admissionv1.ValidatingAdmissionPolicy
	Bindings  []*admissionv1.ValidatingAdmissionPolicyBinding
}

// Guarantees returns the guarantee policies for rc: for each profile
// (the default first), one for namespaces without graft.dev/rev or with
// a tag (every revision graft serves), and where graft serves several
// revisions one for each revision's label; then the policy for
// namespaces whose graft.dev/rev graft does not serve.
func Guarantees(rc inject.RevisionsConfig, o Options) ([]Guarantee, error) {
	o.defaults()
	data, err := guaranteeData(rc, o)
	if err != nil {
		return nil, err
	}
	out, err := RunGuaranteeTemplate(data)
	if err != nil {
		return nil, err
	}
	return decodeGuarantees(out)
}

// Refusals lists, per template export cannot compile, why: the guarantee
// compares less of its sidecars (docs/concepts/guarantee.md, Limits).
func Refusals(rc inject.RevisionsConfig) ([]string, error) {
	var out []string
	for _, r := range rc.Revisions {
		for _, n := range r.Templates.Names() {
			tmpl, _ := r.Templates.Get(n)
			tc, err := export.Checks(tmpl)
			if err != nil {
				return nil, err
			}
			if tc.Refused == "" {
				continue
			}
			var unchecked []string
			for _, v := range tc.Variants {
				for _, c := range v.Containers {
					if len(c.Unchecked) > 0 {
						unchecked = append(unchecked, c.Name+": "+strings.Join(c.Unchecked, ", "))
					}
				}
			}
			line := fmt.Sprintf("revision %s: %s; the guarantee compares only what every render shares", cmp.Or(r.Config.Revision, inject.DefaultRevision), tc.Refused)
			if len(unchecked) > 0 {
				line += " (not compared: " + strings.Join(unchecked, "; ") + ")"
			}
			out = appendNew(out, line)
		}
	}
	return out, nil
}

// guaranteeData is what guarantee.tpl reads, as Helm's values read it.
func guaranteeData(rc inject.RevisionsConfig, o Options) (map[string]any, error) {
	if len(rc.Revisions) == 0 {
		return nil, errors.New("guarantee: no revisions")
	}
	var revisions, excluded []string
	var defaultProfile string
	byRevision := map[string]any{}
	checks := map[string]map[string]export.TemplateCheck{}
	profileNames := map[string]bool{}
	for i, r := range rc.Revisions {
		// The engine validates the configuration as graft serve would.
		if _, err := inject.New(r.Config, r.Templates); err != nil {
			return nil, fmt.Errorf("revision %s: %w", cmp.Or(r.Config.Revision, inject.DefaultRevision), err)
		}
		cfg, err := r.Config.Defaulted()
		if err != nil {
			return nil, err
		}
		if i == 0 {
			defaultProfile = cfg.DefaultProfile
			excluded = slices.Clone(cfg.ExcludedNamespaces)
			if !slices.Contains(excluded, o.Namespace) {
				excluded = append(excluded, o.Namespace)
			}
		}
		revisions = append(revisions, cfg.Revision)
		profiles := map[string]inject.Profile{}
		for name, p := range cfg.Profiles {
			if err := checkProfileName(name); err != nil {
				return nil, err
			}
			profiles[name] = p
			profileNames[name] = true
		}
		byRevision[cfg.Revision] = map[string]any{"profiles": profiles}
		tc := map[string]export.TemplateCheck{}
		for _, n := range r.Templates.Names() {
			tmpl, _ := r.Templates.Get(n)
			if tc[n], err = export.Checks(tmpl); err != nil {
				return nil, fmt.Errorf("revision %s: %w", cfg.Revision, err)
			}
		}
		checks[cfg.Revision] = tc
	}
	tags := []string{}
	for _, t := range rc.Tags {
		tags = append(tags, t.Name)
	}
	slices.Sort(tags)
	order := []string{defaultProfile}
	for _, n := range slices.Sorted(maps.Keys(profileNames)) {
		if n != defaultProfile {
			order = append(order, n)
		}
	}
	data := map[string]any{
		"service":           o.Service,
		"namespace":         o.Namespace,
		"labels":            map[string]string{names.AppNameLabel: names.AppName},
		"validationActions": []string{string(admissionv1.Deny)},
		"excluded":          excluded,
		"profiles":          order,
		"revisions":         revisions,
		"tags":              tags,
		"byRevision":        byRevision,
		"checks":            checks,
	}
	// As Helm's templates see values: JSON's types.
	b, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("guarantee: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("guarantee: %w", err)
	}
	return out, nil
}

// RunGuaranteeTemplate runs guarantee.tpl on data with the functions
// Helm gives templates, and returns its output: the objects, JSON
// documents separated by "---".
func RunGuaranteeTemplate(data map[string]any) ([]byte, error) {
	t := template.New("guarantee")
	funcs := sprig.TxtFuncMap()
	funcs["toJson"] = func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(b)
	}
	funcs["fromJson"] = func(s string) map[string]any {
		m := map[string]any{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	funcs["fromJsonArray"] = func(s string) []any {
		var a []any
		if err := json.Unmarshal([]byte(s), &a); err != nil {
			return []any{err.Error()}
		}
		return a
	}
	funcs["fail"] = func(msg string) (string, error) { return "", errors.New(msg) }
	funcs["include"] = func(name string, data any) (string, error) {
		var b strings.Builder
		if err := t.ExecuteTemplate(&b, name, data); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	if _, err := t.Funcs(funcs).Option("missingkey=zero").Parse(guaranteeTemplate); err != nil {
		return nil, fmt.Errorf("guarantee.tpl: %w", err)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "graft.guarantee", data); err != nil {
		return nil, fmt.Errorf("guarantee: %w", err)
	}
	return buf.Bytes(), nil
}

// decodeGuarantees reads the template's output.
func decodeGuarantees(out []byte) ([]Guarantee, error) {
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var gs []Guarantee
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("guarantee: the template's output: %w", err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue
		}
		var head struct{ Kind string }
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, err
		}
		switch head.Kind {
		case "ValidatingAdmissionPolicy":
			var p admissionv1.ValidatingAdmissionPolicy
			if err := strictJSON(raw, &p); err != nil {
				return nil, err
			}
			g := Guarantee{Policy: &p, Profile: p.Annotations[profileAnnotation]}
			if revs := p.Annotations[revisionsAnnotation]; revs != "" {
				g.Revisions = strings.Split(revs, ",")
			}
			gs = append(gs, g)
		case "ValidatingAdmissionPolicyBinding":
			var b admissionv1.ValidatingAdmissionPolicyBinding
			if err := strictJSON(raw, &b); err != nil {
				return nil, err
			}
			if len(gs) == 0 || gs[len(gs)-1].Policy.Name != b.Spec.PolicyName {
				return nil, fmt.Errorf("guarantee: binding %s does not follow its policy", b.Name)
			}
			gs[len(gs)-1].Bindings = append(gs[len(gs)-1].Bindings, &b)
		default:
			return nil, fmt.Errorf("guarantee: the template wrote a %q", head.Kind)
		}
	}
	return gs, nil
}

// Annotations on the policies: what they guarantee, for people and for
// the tests that pick one.
const (
	profileAnnotation   = "guarantee.graft.dev/profile"
	revisionsAnnotation = "guarantee.graft.dev/revisions"
)

func strictJSON(raw []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("guarantee: the template's output: %w", err)
	}
	return nil
}

func appendNew(l []string, v string) []string {
	if slices.Contains(l, v) {
		return l
	}
	return append(l, v)
}
