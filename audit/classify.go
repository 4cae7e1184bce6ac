package audit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
)

// Class is what a Pod is to graft now. Every Pod gets exactly one; the
// order of Classes is the order of precedence in Classify.
type Class string

const (
	// Spoofed: graft.dev/status cannot be what graft wrote (see Cause).
	// Checked first, in every namespace: the guarantee policy trusts the
	// record, so a record that lies is the first thing to know.
	Spoofed Class = "spoofed"
	// NotSelected: no webhook of graft is called for the Pod's namespace,
	// or graft would skip the Pod (mirror Pod, hostNetwork).
	NotSelected Class = "not-selected"
	// OptedOut: the Pod opts out (label graft.dev/inject=false, or the
	// annotation graft.dev/templates: "").
	OptedOut Class = "opted-out"
	// Conflict: the Pod holds a container, init container or volume named
	// like graft's that graft did not inject.
	Conflict Class = "conflict"
	// Missing: graft would inject the Pod now but it has no record of
	// graft (or a webhook the user asked for is never called).
	Missing Class = "missing"
	// Stale: graft injected the Pod, but a template is recorded at another
	// revision or digest than graft would inject now, or is not there.
	Stale Class = "stale"
	// Current: graft injected every template it would inject now, at the
	// revision and digest it would use now.
	Current Class = "current"
)

// Classes lists every class, in the order reports show them.
func Classes() []Class {
	return []Class{Current, Stale, Missing, Conflict, Spoofed, OptedOut, NotSelected}
}

// ParseClasses reads a comma-separated list of class names.
func ParseClasses(s string) ([]Class, error) {
	var out []Class
	for _, f := range strings.Split(s, ",") {
		c := Class(strings.TrimSpace(f))
		if c == "" {
			continue
		}
		if !slices.Contains(Classes(), c) {
			return nil, fmt.Errorf("unknown class %q (classes: %s)", c, classList())
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func classList() string {
	var names []string
	for _, c := range Classes() {
		names = append(names, string(c))
	}
	return strings.Join(names, ", ")
}

// Causes, as Verdict.Cause reports them.
const (
	// Missing.
	CauseLabelledAfter = "namespace-labelled-after" // the namespace's graft.dev/inject label was written after the Pod was created
	CauseWithoutGraft  = "admitted-without-graft"   // graft failing open, down under failurePolicy Ignore, or not installed
	CauseNotCalled     = "webhook-not-selected"     // the namespace asks for graft but no webhook selects it
	CauseWouldBeDenied = "would-be-denied"          // graft would refuse the Pod now (invalid parameters, ...); also stale

	// Stale.
	CauseTemplateAbsent = "template-not-injected" // a template graft would inject has no record
	CauseRevision       = "revision-changed"      // another revision or digest than now
	CauseLegacyRecord   = "version-1-record"      // a version 1 record: no revision or digest
	CauseRevisionGone   = "revision-not-served"   // the recorded revision is no longer configured
	CauseIncompleteCopy = "incomplete"            // recorded as current, yet graft would still patch it

	// Spoofed.
	CauseUnreadable   = "unreadable-status"   // graft.dev/status does not parse
	CauseAbsent       = "absent-containers"   // the record names containers the Pod lacks
	CauseInconsistent = "inconsistent-record" // the record could not have been written by graft
)

// Namespace is what classification needs of a Namespace.
type Namespace struct {
	Name   string
	Labels map[string]string
	// InjectLabelTime is when graft.dev/inject was last written, from the
	// Namespace's managedFields; zero when unknown.
	InjectLabelTime time.Time
}

// Pod is what classification needs of a Pod. JSON is read during
// Classify only and never kept, so a caller can reuse its buffer.
type Pod struct {
	Namespace, Name string
	Created         time.Time
	Labels          map[string]string
	// Status is the graft.dev/status annotation; HasStatus tells an empty
	// value from none.
	Status    string
	HasStatus bool
	// Containers holds the names of the Pod's containers and init
	// containers.
	Containers []string
	// JSON is the whole Pod as the API server returns it.
	JSON []byte
}

// Verdict is one Pod's classification.
type Verdict struct {
	Class Class
	// Cause says why, for the classes that have several (see Cause*).
	Cause string
	// Profile is the profile whose webhook selects the namespace.
	Profile string
	// Revision is the revision the record names (the first template's;
	// "" without a record); Target the revision graft would inject now.
	Revision, Target string
	// Detail is one line for people.
	Detail string
	// Templates compares, per template, the record with what graft would
	// inject now.
	Templates []Template
}

// Template is one template's state in the Pod.
type Template struct {
	Name string `json:"name"`
	// State: current, stale, missing or conflict (inject.State*).
	State string  `json:"state"`
	From  Version `json:"from"`
	To    Version `json:"to"`
	// Differs lists what an upgrade would change in graft's containers,
	// e.g. `container graft-proxy: image a -> b`.
	Differs []string `json:"differs,omitempty"`
	// Conflict names the conflicting object.
	Conflict string `json:"conflict,omitempty"`
}

// Version is a template's revision and digest.
type Version struct {
	Revision string `json:"revision"`
	Digest   string `json:"digest"`
}

// Engine is what an Auditor runs Pods through: inject.Revisions, the
// engine graft serve runs.
type Engine interface {
	Explain(body []byte, o inject.Options) (*inject.Explanation, error)
	DefaultProfile() string
	Profiles() []string
	Names() []string
	Revisions() []string
}

// Auditor classifies Pods. It is safe for concurrent use if its engine is.
type Auditor struct {
	engine Engine
	sel    Selector
}

// New returns an Auditor running Pods through engine.
func New(engine Engine) *Auditor {
	return &Auditor{engine: engine, sel: Selector{DefaultProfile: engine.DefaultProfile(), Profiles: engine.Profiles()}}
}

// Select is the webhook selection for namespace ns.
func (a *Auditor) Select(ns Namespace) Selection {
	return a.sel.Select(ns.Name, ns.Labels, "its Namespace")
}

// Classify decides what p, in namespace ns, is to graft now.
//
// The engine is given the Pod as it runs, record included, as if it
// were being created: it then compares the record with what it would
// inject (the revision, the digest of template and parameters, and every
// object) exactly as the webhook decides whether to upgrade a Pod. The
// alternative, stripping graft's parts with Uninject and injecting
// afresh, would lose that comparison (a fresh plan cannot tell current
// from stale) and trust a record that may lie.
func (a *Auditor) Classify(ns Namespace, p Pod) (Verdict, error) {
	var v Verdict
	var st *inject.Status
	if p.HasStatus {
		parsed, err := inject.ParseStatus(p.Status)
		if err != nil {
			return spoofed(CauseUnreadable, err.Error()), nil
		}
		st = &parsed
		if len(st.Templates) > 0 {
			v.Revision = st.Templates[0].Revision
		}
		if sv, bad := checkRecord(st, p.Containers); bad {
			sv.Revision = v.Revision
			return sv, nil
		}
	}
	sel := a.Select(ns)
	switch {
	case sel.Reason == "namespace-excluded":
		return v.with(NotSelected, sel.Reason, sel.Why), nil
	case p.Labels[names.Inject] == "false":
		return v.with(OptedOut, "", "the Pod is labelled "+names.Inject+"=false"), nil
	case sel.Profile == "":
		if st == nil && sel.Label != "" && !OptOutLike(sel.Label) {
			return v.with(Missing, CauseNotCalled, sel.Why+": no webhook of graft is called for its Pods"), nil
		}
		return v.with(NotSelected, sel.Reason, sel.Why), nil
	case sel.Revision != "" && !slices.Contains(a.engine.Names(), sel.Revision):
		why := fmt.Sprintf("namespace %s has %s=%s, which names no revision or tag (known: %s)",
			ns.Name, names.Revision, sel.Revision, strings.Join(a.engine.Names(), ", "))
		if st == nil {
			return v.with(Missing, CauseNotCalled, why+": no webhook of graft is called for its Pods"), nil
		}
		return v.with(NotSelected, "namespace-not-selected", why), nil
	}
	v.Profile = sel.Profile
	ex, err := a.engine.Explain(Review(p), inject.Options{Profile: sel.Profile, Revision: sel.Revision, PodSecurity: sel.PodSecurity})
	if err != nil {
		return v, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	v.Target = ex.Result.Revision
	return a.fromExplanation(v, ns, p, st, ex), nil
}

func (v Verdict) with(c Class, cause, detail string) Verdict {
	v.Class, v.Cause, v.Detail = c, cause, detail
	return v
}

func spoofed(cause, detail string) Verdict {
	return Verdict{Class: Spoofed, Cause: cause, Detail: detail}
}

// checkRecord finds what makes a readable record spoofed: it names
// containers the Pod lacks, or it could not have been written by graft
// (a version 2 template entry without a revision or a 16-hex-digit
// digest, or an `injected` list that is not the templates' containers,
// which is what the guarantee policy reads).
func checkRecord(st *inject.Status, have []string) (Verdict, bool) {
	var absent []string
	for _, n := range st.Injected {
		if !slices.Contains(have, n) {
			absent = append(absent, n)
		}
	}
	if len(absent) > 0 {
		return spoofed(CauseAbsent, names.Status+" names containers the Pod does not have: "+strings.Join(absent, ", ")), true
	}
	if st.Version != 2 {
		return Verdict{}, false
	}
	var want []string
	for _, t := range st.Templates {
		if t.Name == "" || t.Revision == "" || !isDigest(t.Digest) {
			return spoofed(CauseInconsistent, fmt.Sprintf("template %q is recorded without a revision or a digest graft writes (revision %q, digest %q)",
				t.Name, t.Revision, t.Digest)), true
		}
		want = append(append(want, t.InitContainers...), t.Containers...)
	}
	if !slices.Equal(want, st.Injected) {
		return spoofed(CauseInconsistent, fmt.Sprintf("%s lists injected [%s], but its templates record [%s]", names.Status,
			strings.Join(st.Injected, ", "), strings.Join(want, ", "))), true
	}
	return Verdict{}, false
}

func isDigest(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// OptOutLike reports graft.dev/inject values people write meaning "no",
// rather than naming a profile that does not exist.
func OptOutLike(v string) bool {
	switch strings.ToLower(v) {
	case "false", "no", "n", "off", "0", "disabled", "disable", "none", "skip", "exclude", "excluded":
		return true
	}
	return false
}

// Review wraps p into the CREATE AdmissionReview the API server would
// send; the Pod's bytes are copied in as they are.
func Review(p Pod) []byte {
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var b strings.Builder
	b.Grow(len(p.JSON) + 512)
	b.WriteString(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"00000000-0000-4000-8000-0000000a0d17",`)
	b.WriteString(`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},`)
	b.WriteString(`"name":` + str(p.Name) + `,"namespace":` + str(p.Namespace) + `,"operation":"CREATE",`)
	b.WriteString(`"userInfo":{"username":"graft-audit"},"object":`)
	b.Write(p.JSON)
	b.WriteString(`}}`)
	return []byte(b.String())
}
