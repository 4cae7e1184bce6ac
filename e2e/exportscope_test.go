package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// Where the exported policies and the webhook differ by design (README,
// "Webhook or policy?"): the equivalence tests predict these Pods from
// the Pod and the webhook's answer alone, and require the policies'
// refusal word for word; every other Pod must come out the same.

// maxDigestCombos is the exporter's bound on a template's digest table
// (export/record.go): enum and bool parameters past it count as the others.
const maxDigestCombos = 64

// policyOnlyRefusal returns the validating policy's message for a Pod the
// webhook injects and the exported policies refuse, else "": a Pod that
// sets a parameter CEL cannot hash to another value than the profile's,
// then one carrying a graft.dev/status record the policies cannot merge.
func (f *exportFixture) policyOnlyRefusal(profile string, p *corev1.Pod, wh outcome) string {
	if wh.refuse != "" || wh.pod == nil {
		return ""
	}
	whStatus, ok := wh.pod.Annotations[inject.StatusAnnotation]
	if !ok {
		return "" // not injected: neither injects
	}
	prof := f.cfg.Profiles[profile]
	selected := f.selection(prof, p.Annotations)
	for _, tn := range profileOrder(prof) {
		if !slices.Contains(selected, tn) {
			continue
		}
		tmpl, _ := f.set.Get(tn)
		combos := 1
		for i := range tmpl.Params {
			prm := &tmpl.Params[i]
			if n := domainSize(prm); n > 0 && combos*n <= maxDigestCombos {
				combos *= n
				continue
			}
			key := tmpl.AnnotationKey(prm.Name)
			v, set := p.Annotations[key]
			base := prm.Default
			if pv, ok := prof.Params[tn][prm.Name]; ok {
				base = pv
			}
			if _, err := prm.Parse(v); set && err == nil && v != base {
				return fmt.Sprintf("annotation %s=%q: graft's exported policy injects only the profile's value of this parameter "+
					"(graft.dev/status records a digest of the values, which CEL cannot compute for others); "+
					"set it in the profile, or create the Pod through graft's webhook", key, v)
			}
		}
	}
	rec, ok := p.Annotations[inject.StatusAnnotation]
	if !ok || !regexp.MustCompile(`^\s*\{`).MatchString(rec) || regexp.MustCompile(`^\s*\{\s*\}\s*$`).MatchString(rec) {
		return "" // no record, or one the engine reads as none
	}
	st, err := inject.ParseStatus(rec)
	if err != nil || st.Version != 2 || st.Value() != rec {
		return "graft.dev/status is not a version 2 record as graft writes it; graft's webhook rewrites or upgrades " +
			"such a record, its exported policy cannot: remove the annotation, or create the Pod through graft's webhook"
	}
	after, err := inject.ParseStatus(whStatus)
	if err != nil {
		return ""
	}
	for _, e := range st.Templates {
		now := after.Template(e.Name)
		if now == nil || !slices.Contains(selected, e.Name) || now.Revision == e.Revision && now.Digest == e.Digest {
			continue
		}
		return fmt.Sprintf("graft.dev/status records template %s at revision %s, digest %s; graft's webhook would upgrade it "+
			"to revision %s, digest %s, its exported policy cannot: remove the annotation, or create the Pod through graft's webhook",
			e.Name, e.Revision, e.Digest, now.Revision, now.Digest)
	}
	return ""
}

// selection is the templates a Pod gets (the engine's selectTemplates):
// graft.dev/templates when every name it holds is allowed, else the
// profile's.
func (f *exportFixture) selection(prof inject.Profile, ann map[string]string) []string {
	v, ok := ann["graft.dev/templates"]
	if !ok {
		return prof.Templates
	}
	allowed := prof.AllowedTemplates
	if len(allowed) == 0 {
		allowed = prof.Templates
	}
	var out []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
		case !slices.Contains(allowed, n):
			return prof.Templates
		case !slices.Contains(out, n):
			out = append(out, n)
		}
	}
	return out
}

// profileOrder is the profile's templates, then the others it allows.
func profileOrder(prof inject.Profile) []string {
	out := slices.Clone(prof.Templates)
	for _, t := range prof.AllowedTemplates {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// domainSize is how many values an enum or bool parameter takes; 0 for
// the others.
func domainSize(p *templates.Param) int {
	switch p.Type {
	case templates.TypeBool:
		return 2
	case templates.TypeEnum:
		return len(p.Values)
	}
	return 0
}

// checkInjectedLabel holds both Pods to the graft.dev/injected rule
// (docs/reference/status-format.md, "The injected label"): the label is
// set, to the revision, exactly when graft.dev/status records a template,
// and the record names it. The comparison that follows then covers the
// label and its place in the record like every other field.
func checkInjectedLabel(t *testing.T, revision string, wh, pol *corev1.Pod) {
	t.Helper()
	for _, p := range []struct {
		who string
		pod *corev1.Pod
	}{{"webhook's", wh}, {"policies'", pol}} {
		if p.pod == nil {
			continue
		}
		value, has := p.pod.Labels[names.Injected]
		status := p.pod.Annotations[names.Status]
		st, err := inject.ParseStatus(status)
		want := err == nil && len(st.Templates) > 0
		if has != want || has && value != revision {
			t.Fatalf("the %s Pod has label %s=%q (set %t), want it set to %q exactly when %s records a template (%s)",
				p.who, names.Injected, value, has, revision, names.Status, status)
		}
		if has && !slices.ContainsFunc(st.Templates, func(ts inject.TemplateStatus) bool { return slices.Contains(ts.Labels, names.Injected) }) {
			t.Fatalf("the %s %s does not record label %s: %s", p.who, names.Status, names.Injected, status)
		}
	}
}
