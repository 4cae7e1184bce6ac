package inject

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/wI2L/jsondiff"

	"github.com/graftdev/graft/internal/names"
)

// The rare paths: a Pod whose graft.dev/status records a template at
// another revision or digest than graft would inject now (a Pod template
// injected offline with an older version, say), or a version 1 status; and
// a Pod whose graft sidecars a later step broke (repair.go). Both rewrite
// whole documents and allocate.
//
// An upgrade replaces what graft owns of the outdated templates, and
// nothing else, with the current revision, in one call: it removes what
// the status names for them (and for templates the profile no longer
// injects: an upgrade brings the Pod to what the profile injects now),
// runs the normal path on the result, and diffs the Pod it was sent
// against the Pod that gives with jsondiff (LCS), so the patch is minimal
// and applies to exactly what the API server sent. Templates that are
// current keep everything, a later step's edits to their containers
// included. Outside an upgrade a status's templates the profile does not
// inject are kept: another profile injected them.

// reworked is the answer the rare paths computed.
type reworked struct {
	// denyMsg, when set, refuses the Pod for reason (a conflict under
	// onConflict: deny, or pod-level resources under podResources: deny).
	denyMsg string
	reason  Reason
	// patch is the RFC 6902 patch, ops counts its operations.
	patch []byte
	ops   int
	// notices are the warnings, the upgrade's first.
	notices []notice
}

// rework answers the Pod p (the JSON obj) for which merge said
// mergeUpgrade (upgrade set) or mergeRepair, within the request's budget
// b: it stops with errBudget between its steps and inside the loops of
// its own parse and merge.
func (e *Engine) rework(ps *profileState, pl *plan, obj string, upgrade bool, b *budget) (*reworked, error) {
	orig := []byte(obj)
	cur := orig
	rw := &reworked{}
	if upgrade {
		var err error
		if cur, rw.notices, err = upgradeStrip(orig, pl, ps.name); err != nil {
			return nil, err
		}
	}
	s := e.getScratch()
	defer e.putScratch(s)
	var ops []byte // restartPolicy ops, fast-path ops and moves, comma-terminated
	mo := mergeOptions{keep: ps.cfg.OnConflict == ConflictKeep, podRevision: ps.cfg.PodRevision, names: &e.impl.sidecars}
	for pass := 0; ; pass++ {
		if b.check() {
			return nil, errBudget
		}
		p2, err := s.parse(cur, b)
		if err != nil {
			return nil, err
		}
		mo.repairs = pass == 0
		out := merge(pl, mo, p2, s, nil)
		if *b = s.budget; b.over { // the scratch's loops read it
			return nil, errBudget
		}
		switch out {
		case mergeConflict:
			rw.denyMsg, rw.reason = string(conflictMessage(nil, s.conflict, ps.name)), ReasonConflict
			return rw, nil
		case mergeUpgrade:
			return nil, fmt.Errorf("internal: the Pod still needs an upgrade after one")
		case mergeRepair:
			n := len(s.notices)
			fix := s.appendRestartOps(nil, pl, p2)
			rw.notices = append(rw.notices, s.notices[n:]...)
			if cur, err = applyOps(cur, fix); err != nil {
				return nil, err
			}
			ops = append(ops, fix...)
			continue
		}
		rw.notices = append(rw.notices, s.notices...)
		if len(s.podAdds) > 0 && ps.cfg.PodResources == PodResourcesDeny {
			rw.denyMsg, rw.reason = s.podResourcesDenial(pl, ps.name), ReasonPodResources
			return rw, nil
		}
		if len(s.edits) > 0 {
			_, err := e.writePatch(pl, p2, s)
			if *b = s.budget; err != nil {
				return nil, err
			}
			fast := s.patch[1 : len(s.patch)-1]
			if cur, err = applyOps(cur, append(fast, ',')); err != nil {
				return nil, err
			}
			ops = append(append(ops, fast...), ',')
		}
		break
	}
	// Placement is checked on the final list, inserts included.
	if b.check() {
		return nil, errBudget
	}
	p3, err := s.parse(cur, b)
	if err != nil {
		return nil, err
	}
	s.readRecord(p3, nil)
	s.judge(pl, mo.names, p3, b)
	s.notices = s.notices[:0]
	if moves := s.appendMoveOps(nil, pl, p3); len(moves) > 0 {
		rw.notices = append(rw.notices, s.notices...)
		if cur, err = applyOps(cur, moves); err != nil {
			return nil, err
		}
		ops = append(ops, moves...)
	}
	if b.check() {
		return nil, errBudget
	}
	if upgrade {
		if rw.patch, err = diffDocs(orig, cur, lcsAffordable(p3)); err != nil {
			return nil, err
		}
	} else {
		rw.patch = append(append([]byte{'['}, strings.TrimSuffix(string(ops), ",")...), ']')
	}
	var list []json.RawMessage
	if err := json.Unmarshal(rw.patch, &list); err != nil {
		return nil, fmt.Errorf("internal: patch: %w", err)
	}
	rw.ops = len(list)
	return rw, nil
}

// parse reads the Pod obj into the scratch's pod, resetting the scratch,
// within the request's budget b: the scratch's budget continues b (its
// loops, merge's included, read it), and parse hands it back. obj must
// stay unchanged while the scratch is in use.
func (s *scratch) parse(obj []byte, b *budget) (*pod, error) {
	s.reset()
	s.budget = *b
	p := &s.pod
	if err := parsePodMeta(b2s(obj), p); err != nil {
		return nil, fmt.Errorf("internal: reworked Pod: %w", err)
	}
	err := parsePodSpec(p, &s.budget)
	switch *b = s.budget; {
	case errors.Is(err, errBudget):
		return nil, errBudget
	case err != nil:
		return nil, fmt.Errorf("internal: reworked Pod: %w", err)
	}
	return p, nil
}

// upgradeStrip returns obj without what the record names of the
// templates to replace (outdated, or no longer in the plan), its status
// rewritten to the templates kept, and the notices saying what the
// upgrade does. Removing is safe whoever wrote the record: the templates
// are injected again as graft renders them now, and what remains of the
// Pod is judged by its content (own.go, collide.go).
func upgradeStrip(obj []byte, pl *plan, profile string) ([]byte, []notice, error) {
	doc, err := decodeDoc(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("internal: upgrade: %w", err)
	}
	st, _, err := statusOf(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("internal: upgrade: %w", err)
	}
	var o owned
	var notes []notice
	kept := Status{Version: 2}
	for i := range st.Templates {
		t := &st.Templates[i]
		ti := pl.templateIndex(t.Name)
		switch {
		case st.Version == 1 && ti >= 0:
			notes = append(notes, textNotice("graft: upgraded template ", t.Name, " from a version 1 ", names.Status))
		case ti < 0:
			notes = append(notes, textNotice("graft: removed template ", t.Name, ": profile ", profile, " no longer injects it"))
		case t.Revision != pl.tmpls[ti].revision || t.Digest != pl.tmpls[ti].digest || st.Template(t.Name) != t:
			notes = append(notes, textNotice("graft: upgraded template ", t.Name, " from ", t.Revision, "/", t.Digest,
				" to ", pl.tmpls[ti].revision, "/", pl.tmpls[ti].digest))
		default:
			kept.Templates = append(kept.Templates, *t)
			continue
		}
		o.addTemplate(t)
		subtractPodResources(doc, t)
	}
	if st.Legacy != nil {
		o.addLegacy(st.Legacy)
	}
	var again []string
	for i := range pl.volumes {
		again = append(again, pl.volumes[i].name)
	}
	o.strip(doc, again)
	value := ""
	if len(kept.Templates) > 0 {
		value = kept.Value()
	}
	setStatus(doc, value)
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("internal: upgrade: %w", err)
	}
	return out, notes, nil
}

func textNotice(parts ...string) notice {
	return notice{kind: noticeText, name: strings.Join(parts, "")}
}

// applyOps applies comma-terminated patch ops to obj as the API server
// would (evanphx/json-patch).
func applyOps(obj, ops []byte) ([]byte, error) {
	if len(ops) == 0 {
		return obj, nil
	}
	return applyPatch(obj, append(append([]byte{'['}, ops[:len(ops)-1]...), ']'))
}

func applyPatch(obj, patch []byte) ([]byte, error) {
	pp, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, fmt.Errorf("internal: patch: %w", err)
	}
	out, err := pp.Apply(obj)
	if err != nil {
		return nil, fmt.Errorf("internal: patch does not apply: %w", err)
	}
	return out, nil
}

// maxLCSCells bounds the work of a minimal diff. jsondiff's LCS fills a
// table of len(a)×len(b) cells, each a deep comparison of two elements,
// for every list that changed: 10,000 app containers would take 800 MB
// and minutes. 1<<18 cells (a 512-element list, or 2 MB of table) is a
// few tens of milliseconds.
const maxLCSCells = 1 << 18

// lcsAffordable reports whether an LCS diff of the lists graft edits in
// p (containers, init containers, volumes, pull secrets, each
// container's env and mounts) stays within maxLCSCells, counting each
// list as if it had changed.
func lcsAffordable(p *pod) bool {
	cells := 0
	sq := func(n int) { cells += (n + 1) * (n + 1) }
	sq(len(p.containers))
	sq(len(p.initContainers))
	sq(len(p.volumes))
	sq(len(p.pullSecrets))
	for i := range p.containers {
		sq(p.containers[i].envCount)
		sq(p.containers[i].mountsCount)
		if cells > maxLCSCells {
			return false
		}
	}
	return cells <= maxLCSCells
}

// lcsAffordableDoc is lcsAffordable for a Pod's JSON; false when it does
// not read as a Pod.
func lcsAffordableDoc(obj []byte) bool {
	var p pod
	if parsePodMeta(b2s(obj), &p) != nil || parsePodSpec(&p, nil) != nil {
		return false
	}
	return lcsAffordable(&p)
}

// diffDocs returns the patch from a to b: minimal with lcs (jsondiff's
// LCS), else jsondiff's positional diff, linear in the documents and
// still exact (a list insert may then rewrite the elements after it).
func diffDocs(a, b []byte, lcs bool) ([]byte, error) {
	var opts []jsondiff.Option
	if lcs {
		opts = append(opts, jsondiff.LCS())
	}
	ops, err := jsondiff.CompareJSON(a, b, opts...)
	if err != nil {
		return nil, fmt.Errorf("internal: diff: %w", err)
	}
	if len(ops) == 0 {
		return []byte("[]"), nil
	}
	out, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("internal: diff: %w", err)
	}
	return out, nil
}
