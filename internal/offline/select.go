package offline

import (
	"fmt"
	"slices"

	yaml "go.yaml.in/yaml/v3"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/manifest"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// neverSelected are the namespaces no webhook of graft selects.
func neverSelected() []string { return audit.NeverSelected() }

// Where a namespace's labels come from.
const (
	fromNamespace = "Namespace"                      // a Namespace object in the input
	fromFlag      = "--" + names.FlagNamespaceLabels // the flag
	fromAssumed   = "assumed"                        // neither: --profile or the default profile
	fromCluster   = "cluster"                        // the namespace in the cluster (explain KIND/NAME)
)

// selector decides, as the API server does with the shipped webhook
// configuration, whether graft is called for a namespace's Pods and with
// which profile: one webhook per profile, selecting namespaces labelled
// graft.dev/inject=<profile> (enabled: the default profile).
type selector struct {
	defaultProfile string
	profiles       []string
	// assumed is the profile for namespaces whose labels are unknown.
	assumed string
	// declared are the labels of the Namespace objects in the input.
	declared map[string]map[string]string
	// flagLabels are --namespace-labels, nil when not given.
	flagLabels map[string]string
	// revision is --revision: the revision of namespaces whose labels are
	// unknown ("" the default revision).
	revision string
}

// selection is the selector's answer for one namespace.
type selection struct {
	profile  string // "" when graft is not called
	revision string // the namespace's graft.dev/rev value, or --revision
	label    string // the namespace's graft.dev/inject value, if any
	from     string // fromNamespace, fromFlag or fromAssumed
	// podSecurity is the namespace's Pod Security enforce level, if known.
	podSecurity templates.Level
	// reason and why say why graft is not called, when it is not.
	reason, why string
}

// options are the engine options of the webhook that serves the
// selection.
func (sel selection) options() inject.Options {
	return inject.Options{Profile: sel.profile, Revision: sel.revision, PodSecurity: sel.podSecurity}
}

func (s *selector) selectFor(ns string) selection {
	if slices.Contains(neverSelected(), ns) {
		return selection{reason: "namespace-excluded", why: fmt.Sprintf("namespace %s is never injected", ns), from: fromNamespace}
	}
	labels, from := s.declared[ns], fromNamespace
	if _, ok := s.declared[ns]; !ok {
		labels, from = s.flagLabels, fromFlag
	}
	if labels == nil {
		return selection{profile: s.assumed, revision: s.revision, label: s.labelFor(s.assumed), from: fromAssumed}
	}
	source := fromFlag
	if from == fromNamespace {
		source = "its Namespace object"
	}
	core := audit.Selector{DefaultProfile: s.defaultProfile, Profiles: s.profiles}.Select(ns, labels, source)
	return selection{profile: core.Profile, revision: core.Revision, label: core.Label, from: from, reason: core.Reason, why: core.Why,
		podSecurity: core.PodSecurity}
}

// labelFor is the label value that selects profile.
func (s *selector) labelFor(profile string) string {
	return audit.Selector{DefaultProfile: s.defaultProfile}.LabelFor(profile)
}

// assumption says what was assumed for a namespace without labels.
func (s *selector) assumption(ns string) string {
	return fmt.Sprintf("namespace %s: no Namespace object in the input and no %s: assuming %s=%s (profile %s)",
		ns, fromFlag, names.Inject, s.labelFor(s.assumed), s.assumed)
}

// declareNamespaces records the labels of every v1 Namespace in docs
// (also inside a List).
func (s *selector) declareNamespaces(docs []*manifest.Document) {
	s.declared = map[string]map[string]string{}
	var visit func(n *yaml.Node, depth int)
	visit = func(n *yaml.Node, depth int) {
		n = manifest.Deref(n)
		if n == nil || n.Kind != yaml.MappingNode {
			return
		}
		apiVersion, kind := manifest.MapString(n, "apiVersion"), manifest.MapString(n, "kind")
		if apiVersion == "v1" && kind == "List" && depth == 0 {
			if items := manifest.MapGet(n, "items"); items != nil {
				for _, it := range items.Content {
					visit(it, depth+1)
				}
			}
			return
		}
		if apiVersion != "v1" || kind != "Namespace" {
			return
		}
		meta := manifest.MapGet(n, "metadata")
		name := manifest.MapString(meta, "name")
		if name == "" {
			return
		}
		labels := map[string]string{}
		if l := manifest.MapGet(meta, "labels"); l != nil && l.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(l.Content); i += 2 {
				labels[l.Content[i].Value] = manifest.MapString(l, l.Content[i].Value)
			}
		}
		s.declared[name] = labels
	}
	for _, d := range docs {
		if r := d.Root(); r != nil {
			visit(r, 0)
		}
	}
}
