package inject

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// ErrUnknownRevision: no revision or tag of that name (404, as for an
// unknown profile).
var ErrUnknownRevision = errors.New("unknown revision or tag")

// RevisionsConfig is what NewRevisions builds from: the revisions graft
// serves and the tags that point at them.
type RevisionsConfig struct {
	// Revisions each pair an engine configuration, whose Revision field
	// names it, with its template set. Every revision has the same profile
	// names: each profile's webhooks serve every revision.
	Revisions []RevisionConfig
	// Tags name revisions, one or several by percentage.
	Tags []TagConfig
	// Default is the revision or tag for requests that name none; empty:
	// the first revision.
	Default string
}

// RevisionConfig is one revision: an engine configuration and templates.
type RevisionConfig struct {
	Config    Config
	Templates *templates.Set
}

// TagConfig is a tag: a name for one revision (a single share of 100) or
// for a split of Pods between revisions.
type TagConfig struct {
	Name  string
	Split []Share
}

// Share is one revision's percentage of a tag.
type Share struct {
	Revision string
	Percent  int
}

// Revisions serves several revisions from one process: it chooses the
// revision for each request and hands the request to that revision's
// Engine. It is immutable and safe for concurrent use; build a new one to
// move a tag.
//
// The choice: the request's route names a revision or tag (Options.
// Revision; empty: the default). Where the profile sets podRevision, the
// Pod's own graft.dev/rev label chooses instead. A tag that splits hashes
// the Pod's controller owner uid (else namespace and generateName), so
// every Pod of a ReplicaSet gets the same revision. Reading the Pod for
// that is a scan of its metadata, done only when a split or a
// podRevision profile needs it.
type Revisions struct {
	revs     []*revision // as configured; revs[0] is the top level
	choices  map[string]*choice
	def      *choice
	profiles []string
	tags     []string
}

// revision is one served revision.
type revision struct {
	name string
	eng  *Engine
}

// choice is what a graft.dev/rev value selects: a revision, or a tag's
// revisions by cumulative percentage.
type choice struct {
	name   string
	tag    bool
	shares []share
	// podRevision holds the profiles ("" for the default profile) that
	// let a Pod choose in any revision of this choice: no entry, no scan.
	podRevision map[string]bool
}

type share struct {
	upTo int // this share serves buckets below upTo (cumulative percent)
	rev  *revision
}

// NewRevisions builds one Engine per revision and checks the tags.
func NewRevisions(c RevisionsConfig, opts ...EngineOption) (*Revisions, error) {
	if len(c.Revisions) == 0 {
		return nil, fmt.Errorf("%w: no revisions", ErrConfig)
	}
	r := &Revisions{choices: make(map[string]*choice, len(c.Revisions)+len(c.Tags))}
	for _, rc := range c.Revisions {
		eng, err := New(rc.Config, rc.Templates, opts...)
		if err != nil && len(c.Revisions) > 1 {
			return nil, fmt.Errorf("revision %q: %w", cmp.Or(rc.Config.Revision, DefaultRevision), err)
		}
		if err != nil {
			return nil, err // the only revision: naming it tells nothing
		}
		name := eng.Revision()
		if _, dup := r.choices[name]; dup {
			return nil, fmt.Errorf("%w: revision %q defined twice", ErrConfig, name)
		}
		profiles := eng.Profiles()
		if r.profiles == nil {
			r.profiles = profiles
		} else if !slices.Equal(profiles, r.profiles) {
			return nil, fmt.Errorf("%w: revision %q has profiles %s, revision %q has %s: every revision must have the same profiles",
				ErrConfig, name, strings.Join(profiles, ", "), r.revs[0].name, strings.Join(r.profiles, ", "))
		}
		rev := &revision{name: name, eng: eng}
		r.revs = append(r.revs, rev)
		r.choices[name] = newChoice(name, false, []share{{upTo: 100, rev: rev}})
	}
	// A Pod served by one revision may hold what another renders: every
	// revision's names are graft's (own.go).
	if len(c.Revisions) > 1 {
		sets := make([]*templates.Set, len(c.Revisions))
		for i, rc := range c.Revisions {
			sets[i] = rc.Templates
		}
		ix := newSidecarIndex(TemplateSidecars(sets...))
		for _, rev := range r.revs {
			rev.eng.impl.sidecars = ix
		}
	}
	for _, t := range c.Tags {
		ch, err := r.tagChoice(t)
		if err != nil {
			return nil, fmt.Errorf("%w: tag %q: %w", ErrConfig, t.Name, err)
		}
		r.choices[t.Name] = ch
		r.tags = append(r.tags, t.Name)
	}
	slices.Sort(r.tags)
	def := c.Default
	if def == "" {
		def = r.revs[0].name
	}
	var ok bool
	if r.def, ok = r.choices[def]; !ok {
		return nil, fmt.Errorf("%w: default revision %q is neither a revision nor a tag", ErrConfig, def)
	}
	return r, nil
}

func (r *Revisions) tagChoice(t TagConfig) (*choice, error) {
	if err := CheckName(t.Name); err != nil {
		return nil, err
	}
	if _, dup := r.choices[t.Name]; dup {
		return nil, errors.New("the name is taken by a revision or another tag")
	}
	if len(t.Split) == 0 {
		return nil, errors.New("names no revision")
	}
	var shares []share
	total := 0
	for i, s := range t.Split {
		ch, ok := r.choices[s.Revision]
		switch {
		case !ok || ch.tag:
			return nil, fmt.Errorf("%q is not a revision", s.Revision)
		case slices.ContainsFunc(t.Split[:i], func(o Share) bool { return o.Revision == s.Revision }):
			return nil, fmt.Errorf("revision %q listed twice", s.Revision)
		case s.Percent < 0 || s.Percent > 100:
			return nil, fmt.Errorf("revision %q: percent %d is not between 0 and 100", s.Revision, s.Percent)
		}
		total += s.Percent
		if s.Percent > 0 {
			shares = append(shares, share{upTo: total, rev: ch.shares[0].rev})
		}
	}
	if total != 100 {
		return nil, fmt.Errorf("percents add up to %d, want 100", total)
	}
	return newChoice(t.Name, true, shares), nil
}

func newChoice(name string, tag bool, shares []share) *choice {
	ch := &choice{name: name, tag: tag, shares: shares}
	for _, s := range shares {
		cfg := s.rev.eng.cfg
		for pname, p := range cfg.Profiles {
			if !p.PodRevision {
				continue
			}
			if ch.podRevision == nil {
				ch.podRevision = map[string]bool{}
			}
			ch.podRevision[pname] = true
			if pname == cfg.DefaultProfile {
				ch.podRevision[""] = true
			}
		}
	}
	return ch
}

// split reports whether the choice depends on the Pod's bucket.
func (ch *choice) split() bool { return len(ch.shares) > 1 }

// pick returns the revision serving bucket.
func (ch *choice) pick(bucket int) *revision {
	for _, s := range ch.shares {
		if bucket < s.upTo {
			return s.rev
		}
	}
	return ch.shares[len(ch.shares)-1].rev
}

// Selection says how a request's revision was chosen.
type Selection struct {
	// Revision is the revision that serves the request.
	Revision string
	// Tag is the tag it was reached through; empty when a revision was
	// named directly.
	Tag string
	// FromPod: the Pod's graft.dev/rev label chose, not its namespace.
	FromPod bool
	// Bucket is the Pod's split bucket (0-99) when a split decided; -1
	// otherwise.
	Bucket int
}

// selected is a selection in the making: revision and choice, plus the
// Pod's unknown graft.dev/rev value when it names nothing.
type selected struct {
	rev        *revision
	via        *choice
	fromPod    bool
	bucket     int
	unknownPod string
}

// selectFor chooses the revision for body. It reads the Pod only when
// the route's choice splits or lets a Pod choose.
func (r *Revisions) selectFor(body []byte, o Options) (selected, error) {
	ch := r.def
	if o.Revision != "" {
		var ok bool
		if ch, ok = r.choices[o.Revision]; !ok {
			return selected{}, fmt.Errorf("%w: %q", ErrUnknownRevision, o.Revision)
		}
	}
	sel := selected{rev: ch.shares[0].rev, via: ch, bucket: -1}
	podMayChoose := ch.podRevision[o.Profile]
	if !ch.split() && !podMayChoose {
		return sel, nil
	}
	// A split alone needs only the owner, found natively; a Pod that may
	// choose, or has no controller, is read in one pass of its metadata.
	var rt routing
	if podMayChoose || !findOwner(b2s(body), &rt) {
		if err := scanRouting(b2s(body), &rt); err != nil {
			return selected{}, err
		}
	}
	bucket := -1
	if ch.split() {
		bucket = rt.bucket()
		sel.rev, sel.bucket = ch.pick(bucket), bucket
	}
	// An empty label value is no choice, as kubectl label shows it.
	if rt.rev == "" || !sel.rev.podRevision(o.Profile) {
		return sel, nil
	}
	pod, ok := r.choices[rt.rev]
	if !ok {
		sel.unknownPod = rt.rev
		return sel, nil
	}
	sel.via, sel.fromPod, sel.bucket = pod, true, -1
	sel.rev = pod.shares[0].rev
	if pod.split() {
		if bucket < 0 {
			bucket = rt.bucket()
		}
		sel.rev, sel.bucket = pod.pick(bucket), bucket
	}
	return sel, nil
}

// podRevision reports whether profile ("" for the default) lets a Pod
// choose its revision here.
func (rev *revision) podRevision(profile string) bool {
	ps, err := rev.eng.profile(profile)
	return err == nil && ps.cfg.PodRevision
}

// Admit answers the review in body like Engine.Admit, with the engine of
// the revision chosen for it; Result.Revision names that revision. A route
// naming no revision or tag is ErrUnknownRevision. A Pod that may choose
// and names an unknown revision is denied, unless its revision would
// skip it anyway.
func (r *Revisions) Admit(dst, body []byte, o Options) ([]byte, Result, error) {
	sel, err := r.selectFor(body, o)
	if err != nil {
		return dst, Result{}, err
	}
	out, res, err := sel.rev.eng.Admit(dst, body, o)
	if err != nil {
		return dst, Result{}, err
	}
	res.Revision = sel.rev.name
	if sel.unknownPod != "" && res.Decision != DecisionSkip {
		out, res, _ = r.denyUnknownPodRevision(dst, body, sel.unknownPod, res)
	}
	return out, res, nil
}

// denyUnknownPodRevision replaces an answer with a denial naming the
// Pod's graft.dev/rev value. res is the answer it replaces (its envelope
// fields are kept).
func (r *Revisions) denyUnknownPodRevision(dst, body []byte, value string, res Result) ([]byte, Result, string) {
	var rv review
	if err := parseReview(b2s(body), &rv, nil); err != nil {
		return dst, res, "" // cannot happen: the engine just read it
	}
	const maxShown = 63
	if len(value) > maxShown {
		value = value[:maxShown] + "..."
	}
	msg := fmt.Sprintf("the Pod's label %s=%q names no revision or tag of graft (known: %s); "+
		"fix or remove the label", names.Revision, value, strings.Join(r.Names(), ", "))
	res.Decision, res.Reason = DecisionDeny, ReasonTemplateSelection
	res.Templates, res.PatchOps, res.PatchBytes, res.Warnings = nil, 0, 0, 0
	w := responseWriter{dst: dst}
	w.begin(&rv, false)
	w.status(400, "BadRequest", msg)
	return w.end(), res, msg
}

// Fail answers like Engine.Fail, per the failure mode of the chosen
// revision's profile.
func (r *Revisions) Fail(dst, body []byte, o Options, reason Reason) ([]byte, Result, error) {
	sel, err := r.selectFor(body, o)
	if err != nil {
		return dst, Result{}, err
	}
	out, res, err := sel.rev.eng.Fail(dst, body, o, reason)
	res.Revision = sel.rev.name
	return out, res, err
}

// Explain is Engine.Explain with the chosen revision, and how it was
// chosen in Explanation.Selection.
func (r *Revisions) Explain(body []byte, o Options) (*Explanation, error) {
	sel, err := r.selectFor(body, o)
	if err != nil {
		return nil, err
	}
	ex, err := sel.rev.eng.Explain(body, o)
	if err != nil {
		return nil, err
	}
	ex.Result.Revision = sel.rev.name
	ex.Selection = Selection{Revision: sel.rev.name, FromPod: sel.fromPod, Bucket: sel.bucket}
	if sel.via.tag {
		ex.Selection.Tag = sel.via.name
	}
	if sel.unknownPod != "" && ex.Result.Decision != DecisionSkip {
		ex.Response, ex.Result, ex.Message = r.denyUnknownPodRevision(nil, body, sel.unknownPod, ex.Result)
		ex.Patch, ex.Templates, ex.Warnings = nil, nil, nil
	}
	return ex, nil
}

// Revisions returns the revision names, the top level first.
func (r *Revisions) Revisions() []string {
	out := make([]string, len(r.revs))
	for i, rev := range r.revs {
		out[i] = rev.name
	}
	return out
}

// Tags returns the tag names, sorted.
func (r *Revisions) Tags() []string { return slices.Clone(r.tags) }

// Names returns every revision and tag name, sorted: the values
// graft.dev/rev may take.
func (r *Revisions) Names() []string { return slices.Sorted(maps.Keys(r.choices)) }

// Profiles returns the profile names, sorted (the same in every revision).
func (r *Revisions) Profiles() []string { return slices.Clone(r.profiles) }

// DefaultProfile returns the profile of requests that name none, as the
// top-level revision defines it (config gives every revision the same).
func (r *Revisions) DefaultProfile() string { return r.revs[0].eng.DefaultProfile() }

// Default returns the revision or tag of requests that name none.
func (r *Revisions) Default() string { return r.def.name }

// Engine returns the engine of a revision (not a tag), or nil.
func (r *Revisions) Engine(revision string) *Engine {
	if ch, ok := r.choices[revision]; ok && !ch.tag {
		return ch.shares[0].rev.eng
	}
	return nil
}
