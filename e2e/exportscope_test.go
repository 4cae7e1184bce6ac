package e2e

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// Where the exported policies and the webhook differ by design (README,
// "Webhook or policy?"): the equivalence tests predict these Pods from
// the Pod and the webhook's answer alone, and require the policies'
// refusal word for word; every other Pod must come out the same.

// injectedLabel is FORMATS.md §4's Pod label.
const injectedLabel = "graft.dev/injected"

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

// dropInjectedLabel compares the graft.dev/injected label apart while the
// engine does not set it (FORMATS.md §4 is being added to the engine on
// another branch): the policies' label must be the revision exactly when
// graft.dev/status records a template, recorded in the status, and is
// then taken out of both for the comparison. Once the webhook's Pod has
// the label, nothing is taken out.
func dropInjectedLabel(t *testing.T, revision string, wh, pol *corev1.Pod) {
	t.Helper()
	if wh == nil || pol == nil {
		return
	}
	if _, ok := wh.Labels[injectedLabel]; ok {
		return
	}
	value, has := pol.Labels[injectedLabel]
	st, err := inject.ParseStatus(pol.Annotations[inject.StatusAnnotation])
	want := err == nil && len(st.Templates) > 0
	if has != want || has && value != revision {
		t.Fatalf("the policies' Pod has label %s=%q (set %t), want it set to %q exactly when graft.dev/status records a template (%s)",
			injectedLabel, value, has, revision, pol.Annotations[inject.StatusAnnotation])
	}
	if !has {
		return
	}
	recorded := false
	for i := range st.Templates {
		l := st.Templates[i].Labels
		if j := slices.Index(l, injectedLabel); j >= 0 {
			st.Templates[i].Labels = slices.Delete(l, j, j+1)
			recorded = true
		}
	}
	if !recorded {
		t.Fatalf("graft.dev/status does not record label %s: %s", injectedLabel, pol.Annotations[inject.StatusAnnotation])
	}
	pol.Labels = maps.Clone(pol.Labels)
	delete(pol.Labels, injectedLabel)
	if len(pol.Labels) == 0 && wh.Labels == nil {
		pol.Labels = nil
	}
	pol.Annotations = maps.Clone(pol.Annotations)
	pol.Annotations[inject.StatusAnnotation] = st.Value()
}
