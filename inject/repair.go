package inject

import (
	"strconv"

	"github.com/graftdev/graft/templates"
)

// graft's own sidecars (own.go: those the Pod holds as graft renders
// them) may be broken by a mutating step after graft: webhooks built on
// an older k8s.io/api round-trip the Pod and drop restartPolicy: Always
// (the sidecar then blocks startup as a plain init container), and some
// reorder or prepend init containers (graft's proxy must start before the
// init containers that need the network). When reinvoked, graft puts back
// exactly these two things, with minimal ops (add or replace of
// restartPolicy, move), and a warning: a sidecar equal to graft's render
// but for restartPolicy is graft's once restored, and the order of init
// containers is no part of what a container is. Any other change to its
// containers is a conflict (own.go), and graft touches nothing it does
// not own.

// slot is one init container in the order check: a sidecar of the plan
// that graft owns (el not nil), or another.
type slot struct {
	el      *element
	sidecar bool // another's: restartPolicy: Always
	pod     int  // index in the Pod's initContainers; -1: inserted now
}

// ownInit returns the plan's init container that the Pod's init
// container at index i is (judge ran), else nil.
func (s *scratch) ownInit(pl *plan, i int) *element {
	if i >= len(s.initOwn) || s.initOwn[i] < 0 {
		return nil
	}
	return pl.byRef[s.initOwn[i]]
}

// needsRepair reports whether one of graft's own sidecars lost
// restartPolicy: Always, or graft's init containers, with the ones this
// request inserts, are out of their placement.
func (s *scratch) needsRepair(pl *plan, p *pod) bool {
	if len(pl.inits) == 0 {
		return false
	}
	for i := range p.initContainers {
		c := &p.initContainers[i]
		if el := s.ownInit(pl, i); el != nil && el.sidecar && !c.sidecar {
			return true
		}
	}
	var ins []insert
	for i := range s.edits {
		if e := &s.edits[i]; e.target == tInits {
			ins = sortedInserts(s.inserts[e.from:e.to])
		}
	}
	s.finalInits(pl, p, ins)
	return !s.placed()
}

// finalInits fills s.slots with the init containers as the patch leaves
// them: the Pod's, with ins (sorted by position) at their positions.
func (s *scratch) finalInits(pl *plan, p *pod, ins []insert) {
	s.slots = s.slots[:0]
	next := 0
	for pos := 0; pos < len(p.initContainers)+len(ins); pos++ {
		if len(ins) > 0 && ins[0].pos == pos {
			s.slots = append(s.slots, slot{el: pl.byRef[ins[0].ref], pod: -1})
			ins = ins[1:]
			continue
		}
		c := &p.initContainers[next]
		s.slots = append(s.slots, slot{el: s.ownInit(pl, next), sidecar: c.sidecar, pod: next})
		next++
	}
}

// placed computes in s.order the order graft's placement gives s.slots
// and reports whether they are in it. The others keep their order;
// graft's go, each group in plan order: "first" ahead of all, then
// "before-init" ahead of the first of the others that is not a native
// sidecar, then "last" after all.
func (s *scratch) placed() bool {
	s.order = s.order[:0]
	ours := false
	for i := range s.slots {
		ours = ours || s.slots[i].el != nil
	}
	if !ours {
		return true
	}
	s.appendGroup(templates.PlaceFirst)
	b := false
	for i := range s.slots {
		sl := &s.slots[i]
		if sl.el != nil {
			continue
		}
		if !b && !sl.sidecar {
			s.appendGroup(templates.PlaceBeforeInit)
			b = true
		}
		s.order = append(s.order, i)
	}
	if !b {
		s.appendGroup(templates.PlaceBeforeInit)
	}
	s.appendGroup(templates.PlaceLast)
	for i, j := range s.order {
		if i != j {
			return false
		}
	}
	return true
}

// appendGroup appends to s.order graft's slots of placement pl, in plan
// order (element refs follow it).
func (s *scratch) appendGroup(pl templates.Placement) {
	from := len(s.order)
	for i := range s.slots {
		if el := s.slots[i].el; el != nil && placementOf(el) == pl {
			s.order = append(s.order, i)
		}
	}
	g := s.order[from:]
	for i := 1; i < len(g); i++ {
		for j := i; j > 0 && s.slots[g[j]].el.ref < s.slots[g[j-1]].el.ref; j-- {
			g[j], g[j-1] = g[j-1], g[j]
		}
	}
}

func placementOf(el *element) templates.Placement {
	if el.placement == "" {
		return templates.PlaceFirst
	}
	return el.placement
}

// appendRestartOps appends, for each of graft's own sidecars in p that
// lost restartPolicy: Always, the op that restores it, with a notice.
func (s *scratch) appendRestartOps(dst []byte, pl *plan, p *pod) []byte {
	for i := range p.initContainers {
		c := &p.initContainers[i]
		el := s.ownInit(pl, i)
		if el == nil || !el.sidecar || c.sidecar {
			continue
		}
		op := "replace"
		if c.restart == absent {
			op = "add"
		}
		dst = appendOpStart(dst, op)
		dst = append(dst, `"path":"/spec/initContainers/`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `/restartPolicy","value":"Always"},`...)
		s.notices = append(s.notices, notice{kind: noticeRestart, name: el.name})
	}
	return dst
}

// appendMoveOps appends the moves that put graft's init containers in p
// (which this request inserts none of) in their placement, each moving
// one of graft's, with a notice per container moved into place.
func (s *scratch) appendMoveOps(dst []byte, pl *plan, p *pod) []byte {
	s.finalInits(pl, p, nil)
	if s.placed() {
		return dst
	}
	// at[k] is the slot now at position k; s.order[k] the one wanted.
	at := append(s.refsBuf[:0], s.order...)
	for k := range at {
		at[k] = k
	}
	move := func(from, to int) {
		dst = appendOpStart(dst, "move")
		dst = append(dst, `"from":"/spec/initContainers/`...)
		dst = strconv.AppendInt(dst, int64(from), 10)
		dst = append(dst, `","path":"/spec/initContainers/`...)
		dst = strconv.AppendInt(dst, int64(to), 10)
		dst = append(dst, `"},`...)
		v := at[from]
		copy(at[from:], at[from+1:])
		copy(at[to+1:], at[to:len(at)-1])
		at[to] = v
	}
	for k := 0; k < len(at); k++ {
		for at[k] != s.order[k] {
			want := s.order[k]
			if el := s.slots[want].el; el != nil {
				j := k + 1
				for at[j] != want {
					j++
				}
				move(j, k)
				s.notices = append(s.notices, notice{kind: noticeMoved, name: el.name, template: string(placementOf(el))})
				continue
			}
			// Another's belongs here and one of graft's is in the way
			// (the others keep their order, so only graft's can be):
			// move it to the end, and into its place when k reaches it.
			move(k, len(at)-1)
		}
	}
	s.refsBuf = at
	return dst
}

func appendOpStart(dst []byte, op string) []byte {
	dst = append(dst, `{"op":"`...)
	dst = append(dst, op...)
	return append(dst, `",`...)
}
