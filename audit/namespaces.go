package audit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/graftdev/graft/internal/names"
)

// Why a namespace that asks for graft selects no webhook: its labels name
// what graft does not serve. Its Pods start without sidecars, or (with
// the guarantee policy) not at all, and graft is never called to say why.
const (
	// ReasonProfileUnknown: graft.dev/inject names no profile.
	ReasonProfileUnknown = "profile-unknown"
	// ReasonRevisionUnknown: graft.dev/rev names neither a revision nor a
	// tag.
	ReasonRevisionUnknown = "revision-unknown"
)

// NamespaceResult is a namespace whose graft labels select no webhook.
type NamespaceResult struct {
	Name string `json:"name"`
	// Inject and Revision are its graft.dev/inject and graft.dev/rev
	// values.
	Inject   string `json:"inject"`
	Revision string `json:"revision,omitempty"`
	// Reason is ReasonProfileUnknown or ReasonRevisionUnknown.
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// CheckNamespace reports ns when it asks for graft (graft.dev/inject set,
// to a value that does not mean "no") yet its labels select no webhook:
// the profile or the revision they name is not one graft serves.
// Namespaces graft never injects are not reported.
func (a *Auditor) CheckNamespace(ns Namespace) (NamespaceResult, bool) {
	inject, ok := ns.Labels[names.Inject]
	if !ok || OptOutLike(inject) || slices.Contains(NeverSelected(), ns.Name) {
		return NamespaceResult{}, false
	}
	r := NamespaceResult{Name: ns.Name, Inject: inject, Revision: ns.Labels[names.Revision]}
	sel := a.Select(ns)
	switch {
	case sel.Profile == "":
		r.Reason = ReasonProfileUnknown
		r.Detail = fmt.Sprintf("%s=%s names no profile (profiles: %s): no webhook of graft is called for its Pods",
			names.Inject, inject, strings.Join(a.engine.Profiles(), ", "))
	case r.Revision != "" && !slices.Contains(a.engine.Names(), r.Revision):
		revs := a.engine.Revisions()
		var tags []string
		for _, n := range a.engine.Names() {
			if !slices.Contains(revs, n) {
				tags = append(tags, n)
			}
		}
		r.Reason = ReasonRevisionUnknown
		r.Detail = fmt.Sprintf("%s=%s is neither a revision nor a tag graft serves (revisions: %s; tags: %s): no webhook of graft is "+
			"called for its Pods, and the guarantee policy refuses them", names.Revision, r.Revision, strings.Join(revs, ", "), cmpOr(strings.Join(tags, ", "), "none"))
	default:
		return NamespaceResult{}, false
	}
	return r, true
}
