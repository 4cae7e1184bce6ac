// Package registration writes the MutatingWebhookConfiguration a graft
// configuration needs: for each profile, one webhook for namespaces
// without a graft.dev/rev label (the default revision) and one for each
// revision and tag; and for a profile whose podSecurity.maxLevel is above
// restricted, each of those once more per Pod Security level stricter
// than that, so that graft learns the namespace's level from the route. deploy/base ships its output for deploy/base's
// configuration, so the registration cannot drift from the profiles and
// revisions graft serves.
package registration

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// Webhook names (the labels they select on are in package names).
const (
	// nameSuffix ends every webhook's name: <profile>.inject.graft.dev,
	// <profile>.<revision-or-tag>.rev.inject.graft.dev.
	nameSuffix    = ".inject." + names.Domain
	revNameSuffix = ".rev" + nameSuffix
	// levelNamePrefix marks the webhook of one Pod Security level:
	// <profile>[.<rev>.rev].psa-<level>.inject.graft.dev.
	levelNamePrefix = "psa-"
)

// Options say where graft runs and what the output's header names.
type Options struct {
	// Service and Namespace are graft's Service; defaults graft and
	// graft-system. The namespace is never sent to graft.
	Service, Namespace string
	// Source is the configuration's path as the header names it.
	Source string
}

func (o *Options) defaults() {
	o.Service = cmp.Or(o.Service, names.ServiceName)
	o.Namespace = cmp.Or(o.Namespace, names.SystemNamespace)
}

// Webhooks returns the registration for f, a parsed configuration.
func Webhooks(f config.File, o Options) (*admissionv1.MutatingWebhookConfiguration, error) {
	o.defaults()
	var err error
	if f, err = f.Defaulted(); err != nil {
		return nil, err
	}
	excluded := slices.Clone(f.ExcludedNamespaces)
	if !slices.Contains(excluded, o.Namespace) {
		excluded = append(excluded, o.Namespace)
	}
	g := generator{f: &f, o: o, excluded: excluded}
	mwc := &admissionv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "graft", Labels: map[string]string{names.AppNameLabel: names.AppName}},
	}
	routes := append(f.RevisionNames(), f.TagNames()...)
	for _, profile := range profileOrder(&f) {
		if err := checkProfileName(profile); err != nil {
			return nil, err
		}
		levels := g.splitLevels(profile)
		for _, rev := range append([]string{""}, routes...) {
			mwc.Webhooks = append(mwc.Webhooks, g.webhook(profile, rev, "", levels))
			for _, l := range levels {
				mwc.Webhooks = append(mwc.Webhooks, g.webhook(profile, rev, l, levels))
			}
		}
	}
	return mwc, nil
}

// splitLevels are the Pod Security levels whose namespaces get a webhook
// of their own for profile, so that graft knows the level: those stricter
// than the highest podSecurity.maxLevel the profile has in any revision.
// A profile at restricted (the default) is not split: nothing it injects
// needs more than any namespace allows. Namespaces at the other levels,
// or without the label (the API server's default, privileged unless its
// admission configuration says otherwise), share the profile's plain
// webhook. An enforce label with an invalid value, which Pod Security
// admission reads as restricted, goes with the plain webhook too: Pod
// Security admission refuses such labels on namespaces it admits.
func (g *generator) splitLevels(profile string) []templates.Level {
	max := templates.LevelRestricted
	for _, rev := range g.f.RevisionNames() {
		cfg, _ := g.f.EngineConfig(rev)
		p, ok := cfg.Profiles[profile]
		if !ok {
			continue
		}
		if l := cmp.Or(p.PodSecurity.MaxLevel, templates.LevelRestricted); !max.Allows(l) {
			max = l
		}
	}
	var out []templates.Level
	for _, l := range templates.Levels() {
		if !l.Allows(max) {
			out = append(out, l)
		}
	}
	return out
}

// profileOrder is the default profile, then the others sorted.
func profileOrder(f *config.File) []string {
	out := []string{f.DefaultProfile}
	for _, p := range slices.Sorted(maps.Keys(f.Profiles)) {
		if p != f.DefaultProfile {
			out = append(out, p)
		}
	}
	return out
}

// checkProfileName refuses a profile that cannot name a webhook or be a
// label value.
func checkProfileName(p string) error {
	errs := validation.IsDNS1123Label(p)
	if len(errs) == 0 {
		errs = validation.IsDNS1123Subdomain(p + ".longest-revision-or-tag-name-a-label-may-have-63-chars.rev." +
			levelNamePrefix + string(templates.LevelRestricted) + nameSuffix)
	}
	if len(errs) > 0 {
		return fmt.Errorf("profile %q cannot name a webhook: %s", p, strings.Join(errs, "; "))
	}
	return nil
}

type generator struct {
	f        *config.File
	o        Options
	excluded []string
}

// webhook is profile's webhook for namespaces labelled graft.dev/rev=rev,
// or without that label when rev is empty; with a level, for those of
// them whose Pod Security enforce label is level (on
// /inject/<profile>.<level>[/<rev>], which tells graft the level), else,
// when split is not empty, for those whose label is none of split. It
// has no matchConditions: kube-apiserver converts the Pod to unstructured
// form for every set of CEL expressions it evaluates, which costs more
// per create than graft takes to skip a mirror or hostNetwork Pod itself.
func (g *generator) webhook(profile, rev string, level templates.Level, split []templates.Level) admissionv1.MutatingWebhook {
	route := profile
	if level != "" {
		route = profile + "." + string(level)
	}
	name, path := profile+nameSuffix, "/inject/"+route
	revision := metav1.LabelSelectorRequirement{Key: names.Revision, Operator: metav1.LabelSelectorOpDoesNotExist}
	if rev != "" {
		name, path = profile+"."+rev+revNameSuffix, path+"/"+rev
		revision = metav1.LabelSelectorRequirement{Key: names.Revision, Operator: metav1.LabelSelectorOpIn, Values: []string{rev}}
	} else if level == "" && g.isDefaultProfile(profile) {
		path = "/inject"
	}
	if level != "" {
		name = strings.TrimSuffix(name, nameSuffix) + "." + levelNamePrefix + string(level) + nameSuffix
	}
	port := int32(443)
	timeout := int32(3)
	w := admissionv1.MutatingWebhook{
		Name: name,
		ClientConfig: admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{
			Name: g.o.Service, Namespace: g.o.Namespace, Port: &port, Path: &path,
		}},
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: append([]metav1.LabelSelectorRequirement{
			{Key: names.Inject, Operator: metav1.LabelSelectorOpIn, Values: []string{profile}},
			revision,
			{Key: names.NamespaceNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: g.excluded},
		}, levelRequirements(level, split)...)},
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: names.Inject, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"false"}},
		}},
		Rules: []admissionv1.RuleWithOperations{{
			Operations: []admissionv1.OperationType{admissionv1.Create},
			Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
				Scope: ptr(admissionv1.NamespacedScope)},
		}},
		MatchPolicy:             ptr(admissionv1.Equivalent),
		SideEffects:             ptr(admissionv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1", "v1beta1"},
		ReinvocationPolicy:      ptr(admissionv1.IfNeededReinvocationPolicy),
		TimeoutSeconds:          &timeout,
		FailurePolicy:           ptr(admissionv1.Ignore),
	}
	return w
}

// levelRequirements select namespaces by their Pod Security enforce
// label: those at level, or (level empty) those at none of split.
func levelRequirements(level templates.Level, split []templates.Level) []metav1.LabelSelectorRequirement {
	switch {
	case level != "":
		return []metav1.LabelSelectorRequirement{{Key: names.PodSecurityEnforce, Operator: metav1.LabelSelectorOpIn, Values: []string{string(level)}}}
	case len(split) > 0:
		vals := make([]string, len(split))
		for i, l := range split {
			vals[i] = string(l)
		}
		return []metav1.LabelSelectorRequirement{{Key: names.PodSecurityEnforce, Operator: metav1.LabelSelectorOpNotIn, Values: vals}}
	}
	return nil
}

// isDefaultProfile reports whether /inject serves profile: it is the
// default profile of every revision the default revision may choose.
func (g *generator) isDefaultProfile(profile string) bool {
	for _, rev := range g.f.Targets("") {
		if cfg, _ := g.f.EngineConfig(rev); cfg.DefaultProfile != profile {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }
