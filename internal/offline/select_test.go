package offline

import (
	"os"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/internal/names"
)

// The selector decides as the shipped webhook configuration selects: for
// every webhook, a namespace labelled with its value is sent to its path,
// and never one of neverSelected; a Pod labelled "false" is never sent.
func TestSelectorFollowsTheShippedWebhookConfiguration(t *testing.T) {
	data, err := os.ReadFile("../../deploy/base/mutatingwebhookconfiguration.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	if err := yaml.Unmarshal(data, &mwc); err != nil { // merge keys override: not strict
		t.Fatal(err)
	}
	e, err := NewEngine("", "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	sel := &selector{defaultProfile: e.DefaultProfile(), profiles: e.Profiles(), assumed: e.DefaultProfile(), declared: map[string]map[string]string{}}
	// One webhook per profile for namespaces without graft.dev/rev, and one
	// per profile and revision or tag for those that name one.
	if want := len(e.Profiles()) * (1 + len(e.Names())); len(mwc.Webhooks) != want {
		t.Errorf("%d webhooks for %d profiles and revisions/tags %v, want %d", len(mwc.Webhooks), len(e.Profiles()), e.Names(), want)
	}
	for _, w := range mwc.Webhooks {
		labels := map[string]string{}
		var excluded []string
		for _, r := range w.NamespaceSelector.MatchExpressions {
			switch {
			case r.Key == names.Inject && r.Operator == metav1.LabelSelectorOpIn && len(r.Values) == 1:
				labels[names.Inject] = r.Values[0]
			case r.Key == names.Revision && r.Operator == metav1.LabelSelectorOpIn && len(r.Values) == 1:
				labels[names.Revision] = r.Values[0]
			case r.Key == names.Revision && r.Operator == metav1.LabelSelectorOpDoesNotExist:
			case r.Key == "kubernetes.io/metadata.name" && r.Operator == metav1.LabelSelectorOpNotIn:
				excluded = r.Values
			default:
				t.Errorf("%s: namespace selector %v: not what the selector models", w.Name, r)
			}
		}
		value := labels[names.Inject]
		if !slices.Equal(excluded, neverSelected()) {
			t.Errorf("%s excludes %v; the selector, %v", w.Name, excluded, neverSelected())
		}
		if got := w.ObjectSelector.MatchExpressions; len(got) != 1 || got[0].Key != names.Inject || got[0].Operator != metav1.LabelSelectorOpNotIn || !slices.Equal(got[0].Values, []string{"false"}) {
			t.Errorf("%s: object selector %v: want %s NotIn [false]", w.Name, got, names.Inject)
		}
		sel.declared["ns"] = labels
		got := sel.selectFor("ns")
		path := "/inject"
		switch {
		case got.revision != "":
			path += "/" + got.profile + "/" + got.revision
		case got.profile != e.DefaultProfile():
			path += "/" + got.profile
		}
		if w.ClientConfig.Service == nil || *w.ClientConfig.Service.Path != path {
			t.Errorf("%s: a namespace labelled %v goes to %v; the selector picks profile %q, revision %q (%s)", w.Name, labels, w.ClientConfig.Service, got.profile, got.revision, path)
		}
		for _, ns := range excluded {
			sel.declared[ns] = map[string]string{names.Inject: value}
			if got := sel.selectFor(ns); got.profile != "" {
				t.Errorf("namespace %s labelled %s: selected for %s", ns, value, got.profile)
			}
		}
	}
}

func TestSelectorWithoutLabels(t *testing.T) {
	sel := &selector{defaultProfile: "enabled", profiles: []string{"enabled", "logs"}, assumed: "logs",
		declared: map[string]map[string]string{"plain": {}, "typo": {names.Inject: "Logs"}}}
	tests := []struct {
		ns, profile, from, why string
	}{
		{"unknown", "logs", fromAssumed, ""},
		{"plain", "", fromNamespace, "namespace plain has no graft.dev/inject label (its Namespace object)"},
		{"typo", "", fromNamespace, "namespace typo has graft.dev/inject=Logs (its Namespace object), which names no profile"},
		{"kube-public", "", fromNamespace, "namespace kube-public is never injected"},
	}
	for _, tt := range tests {
		got := sel.selectFor(tt.ns)
		if got.profile != tt.profile || got.from != tt.from || got.why != tt.why {
			t.Errorf("%s: got %+v", tt.ns, got)
		}
	}
	sel.flagLabels = map[string]string{names.Inject: "enabled"}
	if got := sel.selectFor("unknown"); got.profile != "enabled" || got.from != fromFlag {
		t.Errorf("with --namespace-labels: got %+v", got)
	}
	if got := sel.assumption("shop"); !strings.Contains(got, "assuming graft.dev/inject=logs (profile logs)") {
		t.Errorf("assumption: %s", got)
	}
}
