package inject

import (
	"bytes"

	"github.com/graftdev/graft/internal/names"
)

// target names a list or map of the Pod that graft may add to.
type target uint8

const (
	tInits target = iota
	tContainers
	tVolumes
	tSecrets
	tEnv    // spec.containers[index].env
	tMounts // spec.containers[index].volumeMounts
	tAnnotations
	tLabels
)

// edit is the additions to one list or map. For lists, inserts hold
// positions in the desired list; for maps, keys to add or replace.
type edit struct {
	target   target
	index    int // container index for tEnv and tMounts
	state    presence
	length   int // current list length
	from, to int // span of scratch.inserts
}

type insert struct {
	pos     int
	ref     int
	replace bool // maps: the key exists with another value
}

// mergeOutcome is what merge found.
type mergeOutcome uint8

const (
	// mergeDone: s.edits hold what to add (none: nothing to do).
	mergeDone mergeOutcome = iota
	// mergeConflict: the Pod holds an object named like one of graft's
	// that is not graft's render, a collision, or a key in graft's
	// domains it may not set, and the profile denies such Pods (a key:
	// every profile); s.conflict says which.
	mergeConflict
	// mergeUpgrade: graft.dev/status records a template at another
	// revision or digest than the plan's, or is version 1 (upgrade.go).
	mergeUpgrade
	// mergeRepair: graft's own sidecars lost restartPolicy: Always or
	// their placement after graft injected them (repair.go).
	mergeRepair
)

// conflict is an object of the Pod named like one of graft's that is
// not graft's (own.go), a collision (collide.go) of what a template adds
// with what the Pod's own containers use, or a key in graft's domains the
// Pod may not set (reserved.go).
type conflict struct {
	object string // "container", "init container", "volume", "annotation" or "label"
	name   string
	tmpl   int // plan.tmpls index; -1: a template the plan does not inject
	// template names the template: pl.tmpls[tmpl], or the one whose name
	// the object takes.
	template string
	// kind is the collision; collideNone for a name (why says why it is
	// not graft's, and field where it differs), collideReserved for a key.
	kind  collisionKind
	why   whyNot
	field string
	// app is the Pod's container; graft the template's container (or
	// volume, for a mount); what the port's protocol, the port name, the
	// env var or the mount path; number the port or uid; pod says the
	// uid is the Pod securityContext's. A mount's name is the app's volume.
	app, graft, what string
	number           int64
	pod              bool
}

// mergeOptions are what merge needs of the profile and the engine.
type mergeOptions struct {
	// keep: onConflict: keep (else deny).
	keep bool
	// repairs: check graft's own sidecars are as it injected them.
	repairs bool
	// podRevision: a Pod may carry the label graft.dev/rev.
	podRevision bool
	// names are the names the templates graft serves render.
	names *sidecarIndex
}

// merge computes what pl adds to p, into s.edits and s.inserts, and the
// status to write (s.statusOut). It never removes anything, and replaces
// only graft's own: its status, its injected label, and the keys in
// graft's domains its templates render. It matches by name (volume
// mounts also by path), so a second call after any other mutator adds
// only what is missing. Whether an object of graft's name is graft's is
// what it holds (own.go), never what graft.dev/status says: one that is
// not is a conflict, denied, or with keep the whole template is left out.
// The status only says which revision graft injected before (an older
// one is upgraded) and is kept current. With o.repairs set, merge also
// checks graft's own sidecars are as it injected them.
func merge(pl *plan, o mergeOptions, p *pod, s *scratch, cache *recordCache) mergeOutcome {
	s.readRecord(p, cache)
	r := s.cur
	if needsUpgrade(pl, r) {
		return mergeUpgrade
	}
	s.judge(pl, o.names, p, &s.budget)
	s.skipped = resetBools(s.skipped, len(pl.tmpls))
	for ti := range pl.tmpls {
		c, found := s.named[ti], s.named[ti].object != ""
		if !found {
			c, found = findCollision(pl, ti, p, s, &s.budget)
		}
		if s.budget.over {
			return mergeDone // admit answers budget-exceeded
		}
		if !found {
			continue
		}
		if !o.keep {
			s.conflict = c
			return mergeConflict
		}
		s.skipped[ti] = true
		s.notices = append(s.notices, notice{kind: noticeConflict, object: c.object, name: c.name, template: c.template, conflict: c})
	}
	for i := range s.foreign {
		c := &s.foreign[i]
		if !o.keep {
			s.conflict = *c
			return mergeConflict
		}
		s.notices = append(s.notices, notice{kind: noticeConflict, object: c.object, name: c.name, template: c.template, conflict: *c})
	}
	if c, found := s.reservedKey(pl, p, o.podRevision); found {
		s.conflict = c
		return mergeConflict
	}
	s.added, s.addedAny = resetBools(s.added, len(pl.byRef)), false

	// Native sidecars, placed per template.
	missingInits := s.refsBuf[:0]
	for i := range pl.inits {
		el := &pl.inits[i]
		if s.skipped[el.tmpl] || p.hasInit(el.name) || p.hasContainer(el.name) {
			continue
		}
		missingInits = append(missingInits, i)
	}
	s.refsBuf = missingInits
	if len(missingInits) > 0 {
		e := s.beginEdit(tInits, 0, p.inits, len(p.initContainers))
		n := len(p.initContainers)
		b := n // first ordinary (non-sidecar) init container
		for i, c := range p.initContainers {
			if !c.sidecar {
				b = i
				break
			}
		}
		nFirst, nBefore := 0, 0
		for _, i := range missingInits {
			switch pl.inits[i].placement {
			case "first", "":
				nFirst++
			case "before-init":
				nBefore++
			}
		}
		first, before, last := 0, nFirst+b, nFirst+n+nBefore
		for _, i := range missingInits {
			el := &pl.inits[i]
			var pos int
			switch el.placement {
			case "first", "":
				pos, first = first, first+1
			case "before-init":
				pos, before = before, before+1
			default:
				pos, last = last, last+1
			}
			s.add(pos, el.ref)
		}
		s.endEdit(e)
	}

	// Sidecars in spec.containers, appended.
	s.appendMissing(tContainers, 0, p.containersSeen, len(p.containers), pl.sidecars, func(name string) bool {
		return p.hasContainer(name) || p.hasInit(name)
	})
	s.appendMissing(tVolumes, 0, p.vols, len(p.volumes), pl.volumes, func(name string) bool {
		return contains(p.volumes, name)
	})
	s.appendMissing(tSecrets, 0, p.secrets, len(p.pullSecrets), pl.secrets, func(name string) bool {
		return contains(p.pullSecrets, name)
	})

	// Every app container, including ones another mutator added since;
	// graft's own containers are those that hold graft's render.
	for ci := range p.containers {
		if s.budget.spent() {
			break // admit answers budget-exceeded
		}
		c := &p.containers[ci]
		if s.ctrOwn[ci] >= 0 {
			continue
		}
		env := p.envNames[c.envFrom:c.envTo]
		s.appendMissing(tEnv, ci, c.env, c.envCount, pl.appEnv, func(name string) bool {
			return contains(env, name)
		})
		mounts := p.mounts[c.mountsFrom:c.mountsTo]
		s.appendMissingMounts(ci, c, mounts, pl.appMount)
	}

	// Metadata: the templates' annotations and labels, graft's own value
	// for a key in graft's domains, else only where absent; the status
	// annotation is graft's own and kept current. It records every
	// addition, so it is written once they are all known.
	s.markRendered(pl, pl.annotations, p.annotationKeys)
	s.markRendered(pl, pl.labels[:pl.injectedAt], p.labelKeys)
	injected, replaceInjected := s.markInjected(pl, p)
	s.podResourceAdds(pl, p)
	// A status graft wrote, to which this request adds nothing, stays.
	unchanged := s.curCanonical && !s.addedAny && !s.ownedAny && len(s.keptObjs) == 0 && s.recordFits(pl)
	if !unchanged {
		s.statusOut = s.appendRecord(s.statusOut[:0], r, pl, p)
	}
	e := s.beginEdit(tAnnotations, 0, p.annotations, 0)
	s.addMarked(pl.annotations, p.annotationKeys)
	switch {
	case !s.hasStatus:
		s.inserts = append(s.inserts, insert{ref: pl.status.ref})
	case !unchanged && !s.statusCurrent(p):
		s.inserts = append(s.inserts, insert{ref: pl.status.ref, replace: true})
	}
	s.endEdit(e)
	e = s.beginEdit(tLabels, 0, p.labels, 0)
	s.addMarked(pl.labels[:pl.injectedAt], p.labelKeys)
	if injected != nil {
		s.inserts = append(s.inserts, insert{ref: injected.ref, replace: replaceInjected})
	}
	s.endEdit(e)

	if o.repairs && s.needsRepair(pl, p) {
		return mergeRepair
	}
	return mergeDone
}

// markRendered marks added each element of els (annotations or labels)
// of a template this request injects that the Pod lacks, or, for a key
// in graft's domains, holds with another value: graft's value is the only
// one such a key may have. One the Pod holds with graft's value is
// graft's.
func (s *scratch) markRendered(pl *plan, els []element, have []kv) {
	for i := range els {
		el := &els[i]
		if s.skipped[el.tmpl] {
			continue
		}
		v, ok := lookup(have, el.name)
		switch {
		case !ok:
			s.added[el.ref], s.addedAny = true, true
		case !names.Reserved(el.name):
			// Another domain's key: the Pod's value stays.
		case sameContent(v, rawContent(el.raw)):
			s.own(pl, el)
		default:
			s.added[el.ref], s.addedAny = true, true
		}
	}
}

// rawContent is a quoted JSON string's content.
func rawContent(quoted []byte) string { return b2s(quoted[1 : len(quoted)-1]) }

// markInjected marks added the graft.dev/injected label when the Pod
// lacks it or holds another value (then replace is set), and this request
// injects any template: it returns the element of the template that
// records it, the first of those the record already credits with it, else
// the first injected. A Pod carrying the plan's revision is left as it is.
func (s *scratch) markInjected(pl *plan, p *pod) (el *element, replace bool) {
	v, ok := p.label(names.Injected)
	if ok && v == pl.revision {
		return nil, false
	}
	at := -1
	for ti := range pl.tmpls {
		if s.skipped[ti] {
			continue
		}
		if s.cur.credits(pl.tmpls[ti].name, kLabels, names.Injected) {
			at = ti
			break
		}
		if at < 0 {
			at = ti
		}
	}
	if at < 0 {
		return nil, false
	}
	el = &pl.labels[pl.injectedAt+at]
	s.added[el.ref], s.addedAny = true, true
	return el, ok
}

// addMarked inserts into the open map edit each element of els that
// merge marked added, replacing the value of a key the Pod has.
func (s *scratch) addMarked(els []element, have []kv) {
	for i := range els {
		if el := &els[i]; s.added[el.ref] {
			_, replace := lookup(have, el.name)
			s.inserts = append(s.inserts, insert{ref: el.ref, replace: replace})
		}
	}
}

// add records an insert into the open edit and that its element is added.
func (s *scratch) add(pos, ref int) {
	s.inserts = append(s.inserts, insert{pos: pos, ref: ref})
	s.added[ref], s.addedAny = true, true
}

// recordFits reports whether the record has an entry for every template
// of pl, which this request injects all of, and none for another
// template (which it would drop), nor a kept list (which it writes anew).
func (s *scratch) recordFits(pl *plan) bool {
	r := s.cur
	if len(r.kept) > 0 {
		return false
	}
	for i := range r.entries {
		ti := pl.templateIndex(r.entries[i].name)
		if ti < 0 || s.skipped[ti] || r.find(r.entries[i].name) != i {
			return false
		}
	}
	for ti := range pl.tmpls {
		if s.skipped[ti] || r.find(pl.tmpls[ti].name) < 0 {
			return false // a skipped template gets a kept entry
		}
	}
	return true
}

// needsUpgrade reports whether the record holds a template of pl at
// another revision or digest than pl's, or is a version 1 record naming
// anything.
func needsUpgrade(pl *plan, r *record) bool {
	if r.hasLegacy() {
		return true
	}
	for i := range r.entries {
		e := &r.entries[i]
		if ti := pl.templateIndex(e.name); ti >= 0 && r.find(e.name) == i {
			if t := &pl.tmpls[ti]; e.revision != t.revision || e.digest != t.digest {
				return true
			}
		}
	}
	return false
}

// statusCurrent reports whether the Pod's status is the one to write:
// the same bytes as the request carries them (a Pod graft injected), else
// the same value escaped otherwise.
func (s *scratch) statusCurrent(p *pod) bool {
	raw, _ := p.annotation(names.Status)
	if raw == b2s(s.statusOut) {
		return true
	}
	if s.cur.version == 0 {
		return false
	}
	var err error
	s.statusTmp, _, err = appendUnescaped(s.statusTmp[:0], b2s(s.statusOut))
	return err == nil && bytes.Equal(s.statusTmp, s.curValue)
}

// readRecord reads the Pod's graft.dev/status into s.cur (version 0 when
// absent or unreadable) and its value into s.curValue: from the cache,
// or read into the scratch and cached.
func (s *scratch) readRecord(p *pod, cache *recordCache) {
	s.rec.reset()
	s.cur, s.curValue, s.curCanonical = &s.rec, nil, false
	raw, ok := p.annotation(names.Status)
	s.hasStatus = ok
	if !ok {
		return
	}
	if cache != nil {
		if rs := cache.get(raw); rs != nil {
			s.cur, s.curValue, s.curCanonical = &rs.rec, rs.value, rs.canonical
			return
		}
	}
	var err error
	var plain bool
	if s.statusIn, plain, err = appendUnescaped(s.statusIn[:0], raw); err == nil {
		err = s.rec.parse(b2s(s.statusIn), plain)
	}
	if err != nil {
		s.rec.reset()
	}
	s.curValue = s.statusIn
	if cache != nil {
		if rs := cache.add(raw, s, plain); rs != nil {
			s.cur, s.curValue, s.curCanonical = &rs.rec, rs.value, rs.canonical
		}
	}
}

func resetBools(b []bool, n int) []bool {
	b = b[:0]
	for range n {
		b = append(b, false)
	}
	return b
}

func (s *scratch) beginEdit(t target, index int, state presence, length int) int {
	s.edits = append(s.edits, edit{target: t, index: index, state: state, length: length, from: len(s.inserts)})
	return len(s.edits) - 1
}

// endEdit closes edit i, dropping it if it holds no insert.
func (s *scratch) endEdit(i int) {
	s.edits[i].to = len(s.inserts)
	if s.edits[i].from == s.edits[i].to {
		s.edits = s.edits[:i]
	}
}

// appendMissing appends each element of want that has() says is missing,
// leaving out those of templates this request skips.
func (s *scratch) appendMissing(t target, index int, state presence, length int, want []element, has func(string) bool) {
	e := s.beginEdit(t, index, state, length)
	pos := length
	if state != present {
		pos = 0
	}
	for i := range want {
		if s.skipped[want[i].tmpl] || has(want[i].name) {
			continue
		}
		s.add(pos, want[i].ref)
		pos++
	}
	s.endEdit(e)
}

func (s *scratch) appendMissingMounts(ci int, c *container, have []mount, want []element) {
	e := s.beginEdit(tMounts, ci, c.volumeMounts, c.mountsCount)
	pos := c.mountsCount
	if c.volumeMounts != present {
		pos = 0
	}
	for i := range want {
		w := &want[i]
		if s.skipped[w.tmpl] {
			continue
		}
		found := false
		for _, m := range have {
			if m.name == w.name || m.path == w.mountPath {
				found = true
				break
			}
		}
		if found {
			continue
		}
		s.add(pos, w.ref)
		pos++
	}
	s.endEdit(e)
}

func contains(list []string, name string) bool {
	for _, n := range list {
		if n == name {
			return true
		}
	}
	return false
}
