// Package audit decides, for Pods already running, what graft would do
// with each if it were created now, and how that compares with what
// graft.dev/status says graft did: the classification behind
// `graft audit` and live `graft explain`. It runs the engine graft serve
// runs and reads no cluster itself: callers hand it Pods and Namespaces.
package audit

import (
	"fmt"
	"slices"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// NeverSelected are the namespaces the shipped webhook configuration's
// namespaceSelector leaves out whatever their labels: the control plane's
// and graft's own (deploy/base/mutatingwebhookconfiguration.yaml; a test
// in internal/offline holds the two lists together).
func NeverSelected() []string {
	return []string{"kube-system", "kube-public", "kube-node-lease", names.SystemNamespace}
}

// Selector decides, as the API server does with the shipped webhook
// configuration, whether graft is called for a namespace's Pods and with
// which profile: one webhook per profile, selecting namespaces labelled
// graft.dev/inject=<profile> (enabled: the default profile), and per
// revision or tag those labelled graft.dev/rev=<name>.
type Selector struct {
	DefaultProfile string
	Profiles       []string
}

// Selection is the Selector's answer for one namespace.
type Selection struct {
	// Profile is the profile whose webhook is called; "" when none is.
	Profile string
	// Revision is the namespace's graft.dev/rev value ("" the default).
	Revision string
	// Label is the namespace's graft.dev/inject value, if any.
	Label string
	// Reason and Why say why no webhook is called, when none is:
	// namespace-excluded or namespace-not-selected.
	Reason, Why string
	// PodSecurity is the level the namespace's Pod Security enforce label
	// names, read as Pod Security admission reads it (an invalid value is
	// restricted); "" without the label. Engine options carry it, as the
	// route of a profile split by level does (inject.Options.PodSecurity).
	PodSecurity templates.Level
}

// enforcedLevel reads the namespace label pod-security.kubernetes.io/enforce.
func enforcedLevel(labels map[string]string) templates.Level {
	v, ok := labels[names.PodSecurityEnforce]
	if !ok {
		return ""
	}
	l, err := templates.ParseLevel(v)
	if err != nil {
		return templates.LevelRestricted
	}
	return l
}

// Select selects for namespace ns with labels; source says where the
// labels were read, for Why (e.g. "its Namespace object").
func (s Selector) Select(ns string, labels map[string]string, source string) Selection {
	if slices.Contains(NeverSelected(), ns) {
		return Selection{Reason: "namespace-excluded", Why: fmt.Sprintf("namespace %s is never injected", ns)}
	}
	v, ok := labels[names.Inject]
	switch {
	case !ok:
		return Selection{Reason: "namespace-not-selected",
			Why: fmt.Sprintf("namespace %s has no %s label (%s)", ns, names.Inject, source)}
	case v == names.EnabledValue:
		return Selection{Profile: s.DefaultProfile, Revision: labels[names.Revision], Label: v, PodSecurity: enforcedLevel(labels)}
	case slices.Contains(s.Profiles, v):
		return Selection{Profile: v, Revision: labels[names.Revision], Label: v, PodSecurity: enforcedLevel(labels)}
	}
	return Selection{Label: v, Reason: "namespace-not-selected",
		Why: fmt.Sprintf("namespace %s has %s=%s (%s), which names no profile", ns, names.Inject, v, source)}
}

// LabelFor is the names.Inject value that selects profile.
func (s Selector) LabelFor(profile string) string {
	if profile == s.DefaultProfile {
		return names.EnabledValue
	}
	return profile
}
