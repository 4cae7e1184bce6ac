package inject

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/wI2L/jsondiff"
)

// The patch is computed by jsondiff on a skeleton of each list or map of
// the Pod that graft adds to: each run of existing list elements stood in
// for by one opaque token, and graft's elements by reference tokens.
// jsondiff (with LCS, so an insert at index 0 is one op) decides the
// minimal ops once per skeleton shape. A shape depends neither on list
// lengths nor on which container a list belongs to, so a Pod with 5,000
// env vars costs the same diff as one with five, 10,000 app containers
// given the same env vars share one shape, and the cache stays small. The
// ops are cached as a recipe and replayed with the rendered elements'
// bytes and the request's own indices, so the request path does not diff,
// marshal or allocate.
//
// Each list or map is diffed alone: jsondiff compares an object's members
// independently, so the ops for a whole skeleton are those of its parts;
// and the parts are disjoint paths, so their order does not matter. They
// are written in edit order (see merge).

// opRecipe is one cached patch operation.
type opRecipe struct {
	op string // "add" or "replace"
	// ref >= 0: the op inserts that element into a list; its index is the
	// insert's position in this request. ref < 0: the path is the edit's
	// pointer followed by tail (a map key, or nothing for a whole list).
	ref  int
	tail string // already escaped as JSON Pointer and as JSON string content
	segs []segment
}

type segment struct {
	lit []byte
	ref int // element ref when lit is nil
}

// patchRecipe is the ops jsondiff chose for one edit's skeleton shape,
// ready to replay for any edit of that shape (appendEditOps).
type patchRecipe struct{ ops []opRecipe }

// shapeCache maps a shape key to what was compiled for it: the recipe of
// one edit's shape, or the recipes of a whole Pod's (podShapes). It is
// bounded: past maxShapes new shapes are compiled per request and not
// stored. A key is bounded by the plan's size, never by the Pod's.
type shapeCache[V any] struct {
	mu sync.RWMutex
	m  map[string]V
}

const maxShapes = 4096

func (c *shapeCache[V]) get(key []byte) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[string(key)]
	c.mu.RUnlock()
	return v, ok
}

func (c *shapeCache[V]) put(key []byte, v V) {
	c.mu.Lock()
	if len(c.m) < maxShapes {
		c.m[string(key)] = v
	}
	c.mu.Unlock()
}

// maxPodShapeEdits is the most edits a Pod's shape is cached whole for:
// graft edits at most seven lists and maps besides the app containers'
// env and mounts, so a Pod with a few app containers is one look-up; a
// Pod with more looks up each edit's recipe (its key would grow with
// the Pod).
const maxPodShapeEdits = 16

// recipes sets s.recipes to the recipe of each edit in s.edits: the whole
// Pod's shape at once when it has few edits, else edit by edit.
func (e *Engine) recipes(pl *plan, s *scratch) error {
	s.recipes = s.recipes[:0]
	whole := len(s.edits) <= maxPodShapeEdits
	if whole {
		key := binary.AppendUvarint(s.podKey[:0], uint64(pl.id))
		for i := range s.edits {
			// Each edit's shape, prefixed with its length in two bytes:
			// the keys of two Pods are equal only if each of their
			// edits' is.
			at := len(key)
			key = appendEditShape(append(key, 0, 0), &s.edits[i], s)
			n := len(key) - at - 2
			if n > 0xffff {
				whole = false // a plan of tens of thousands of elements
				break
			}
			binary.LittleEndian.PutUint16(key[at:], uint16(n))
		}
		s.podKey = key
	}
	if whole {
		if rcs, ok := e.impl.podShapes.get(s.podKey); ok {
			s.recipes = append(s.recipes, rcs...)
			return nil
		}
	}
	for i := range s.edits {
		rc, err := e.recipe(pl, &s.edits[i], s)
		if err != nil {
			return err
		}
		s.recipes = append(s.recipes, rc)
	}
	if whole {
		e.impl.podShapes.put(s.podKey, slices.Clone(s.recipes))
	}
	return nil
}

// Shape keys: a run of existing elements is 0, an insert its ref + 1
// (as uvarints: no insert's first byte is 0).
const runMarker = 0

// appendShapeKey encodes everything that decides edit e's ops: the plan
// and the edit's shape (appendEditShape).
func appendShapeKey(dst []byte, planID uint32, e *edit, s *scratch) []byte {
	dst = binary.AppendUvarint(dst, uint64(planID))
	return appendEditShape(dst, e, s)
}

// appendEditShape encodes edit e's target, its state and the order of
// existing runs and inserts. The container an edit is about is not part
// of it: the path says that.
func appendEditShape(dst []byte, e *edit, s *scratch) []byte {
	dst = append(dst, byte(e.target), byte(e.state))
	dst = binary.AppendUvarint(dst, uint64(e.to-e.from))
	if e.isMap() {
		for _, in := range s.inserts[e.from:e.to] {
			dst = binary.AppendUvarint(dst, uint64(in.ref))
			dst = append(dst, boolByte(in.replace))
		}
		return dst
	}
	e.eachItem(s, func(run bool, in insert) {
		if run {
			dst = append(dst, runMarker)
		} else {
			dst = binary.AppendUvarint(dst, uint64(in.ref)+1)
		}
	})
	return dst
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// eachItem walks a list edit's desired list: runs of existing elements
// (run true) and inserts, in order. Inserts are sorted by position.
func (e *edit) eachItem(s *scratch, fn func(run bool, in insert)) {
	ins := s.inserts[e.from:e.to]
	next := 0 // next existing element's position in the desired list
	used := 0 // existing elements placed so far
	for _, in := range sortedInserts(ins) {
		if in.pos > next {
			fn(true, insert{})
			used += in.pos - next
		}
		fn(false, in)
		next = in.pos + 1
	}
	if e.state == present && used < e.length {
		fn(true, insert{})
	}
}

// sortedInserts returns ins, which merge appends in position order for
// every target but init containers, sorted by position. Init container
// groups are few; an insertion sort in place keeps this allocation-free.
func sortedInserts(ins []insert) []insert {
	for i := 1; i < len(ins); i++ {
		for j := i; j > 0 && ins[j].pos < ins[j-1].pos; j-- {
			ins[j], ins[j-1] = ins[j-1], ins[j]
		}
	}
	return ins
}

// appendPointer appends the JSON Pointer of an edit's list or map.
func (e *edit) appendPointer(dst []byte) []byte {
	switch e.target {
	case tInits:
		return append(dst, "/spec/initContainers"...)
	case tContainers:
		return append(dst, "/spec/containers"...)
	case tVolumes:
		return append(dst, "/spec/volumes"...)
	case tSecrets:
		return append(dst, "/spec/imagePullSecrets"...)
	case tEnv, tMounts:
		dst = append(dst, "/spec/containers/"...)
		dst = strconv.AppendInt(dst, int64(e.index), 10)
		if e.target == tEnv {
			return append(dst, "/env"...)
		}
		return append(dst, "/volumeMounts"...)
	case tAnnotations:
		return append(dst, "/metadata/annotations"...)
	case tLabels:
		return append(dst, "/metadata/labels"...)
	}
	return dst
}

func (e *edit) isMap() bool { return e.target == tAnnotations || e.target == tLabels }

// Skeleton tokens. NUL never occurs in Kubernetes names or values graft
// reads, so a token cannot collide with a real value.
const (
	tokenPrefix = "\x00graft:"
	runPrefix   = "\x00run:"
)

// skeletonKey is the one member of the skeleton compileRecipe diffs.
const skeletonKey = "e"

// compileRecipe diffs the skeleton of edit e with jsondiff and turns the
// ops into a recipe. It runs once per shape.
func compileRecipe(pl *plan, e *edit, s *scratch) (*patchRecipe, error) {
	src := map[string]any{}
	dst := map[string]any{}
	if e.isMap() {
		old, want := map[string]any{}, map[string]any{}
		for _, in := range s.inserts[e.from:e.to] {
			name := pl.byRef[in.ref].name
			if in.replace {
				old[name] = "\x00old"
			}
			want[name] = tokenPrefix + strconv.Itoa(in.ref)
		}
		switch e.state {
		case isNull:
			src[skeletonKey] = nil
		case present:
			src[skeletonKey] = old
		}
		dst[skeletonKey] = want
	} else {
		var cur, want []any
		runs := 0
		e.eachItem(s, func(run bool, in insert) {
			if run {
				tok := runPrefix + strconv.Itoa(runs)
				runs++
				cur = append(cur, tok)
				want = append(want, tok)
				return
			}
			want = append(want, tokenPrefix+strconv.Itoa(in.ref))
		})
		switch e.state {
		case isNull:
			src[skeletonKey] = nil
		case present:
			if cur == nil {
				cur = []any{}
			}
			src[skeletonKey] = cur
		}
		dst[skeletonKey] = want
	}
	srcJSON, err := json.Marshal(src)
	if err != nil {
		return nil, err
	}
	dstJSON, err := json.Marshal(dst)
	if err != nil {
		return nil, err
	}
	ops, err := jsondiff.CompareJSON(srcJSON, dstJSON, jsondiff.LCS())
	if err != nil {
		return nil, fmt.Errorf("internal: diff skeleton: %w", err)
	}
	rc := &patchRecipe{}
	for _, op := range ops {
		if op.Type != jsondiff.OperationAdd && op.Type != jsondiff.OperationReplace {
			return nil, fmt.Errorf("internal: skeleton diff produced %s at %s", op.Type, op.Path)
		}
		// Map the skeleton path /e[/<rest>] onto the Pod.
		key, tail, _ := strings.Cut(strings.TrimPrefix(op.Path, "/"), "/")
		if key != skeletonKey {
			return nil, fmt.Errorf("internal: unexpected skeleton path %q", op.Path)
		}
		val, err := json.Marshal(op.Value)
		if err != nil {
			return nil, fmt.Errorf("internal: %w", err)
		}
		segs, err := splitTokens(val)
		if err != nil {
			return nil, err
		}
		r := opRecipe{op: op.Type, ref: -1, segs: segs}
		if !e.isMap() && tail != "" {
			// An element added to a list: its index is request-specific.
			if len(segs) != 1 || segs[0].lit != nil {
				return nil, fmt.Errorf("internal: list op %s %s does not add one of graft's elements", op.Type, op.Path)
			}
			r.ref = segs[0].ref
		} else if tail != "" {
			r.tail = string(appendEscaped([]byte("/"), tail))
		}
		rc.ops = append(rc.ops, r)
	}
	return rc, nil
}

// splitTokens cuts a marshalled value at its reference tokens.
func splitTokens(val []byte) ([]segment, error) {
	const tok = `"\u0000graft:`
	var segs []segment
	for {
		i := bytes.Index(val, []byte(tok))
		if i < 0 {
			if len(val) > 0 {
				segs = append(segs, segment{lit: val})
			}
			return segs, nil
		}
		if i > 0 {
			segs = append(segs, segment{lit: val[:i]})
		}
		rest := val[i+len(tok):]
		j := bytes.IndexByte(rest, '"')
		if j < 0 {
			return nil, fmt.Errorf("internal: unterminated token")
		}
		ref, err := strconv.Atoi(string(rest[:j]))
		if err != nil {
			return nil, fmt.Errorf("internal: bad token: %w", err)
		}
		segs = append(segs, segment{ref: ref})
		val = rest[j+1:]
	}
}

// appendEditOps replays rc for edit e with pl's element bytes, each op
// followed by a comma.
func appendEditOps(dst []byte, rc *patchRecipe, e *edit, pl *plan, s *scratch) []byte {
	for i := range rc.ops {
		op := &rc.ops[i]
		dst = append(dst, `{"op":"`...)
		dst = append(dst, op.op...)
		dst = append(dst, `","path":"`...)
		dst = e.appendPointer(dst)
		if op.ref >= 0 {
			dst = append(dst, '/')
			dst = strconv.AppendInt(dst, int64(e.insertPos(s, op.ref)), 10)
		} else {
			dst = append(dst, op.tail...)
		}
		dst = append(dst, `","value":`...)
		for _, sg := range op.segs {
			if sg.lit != nil {
				dst = append(dst, sg.lit...)
			} else {
				dst = s.appendElement(dst, pl.byRef[sg.ref])
			}
		}
		dst = append(dst, '}', ',')
	}
	return dst
}

// insertPos returns the desired position of the element ref in edit e.
// jsondiff emits a list's adds in ascending order, each index valid once
// the adds before it are applied, which is the element's final position.
func (e *edit) insertPos(s *scratch, ref int) int {
	for _, in := range s.inserts[e.from:e.to] {
		if in.ref == ref {
			return in.pos
		}
	}
	return -1 // unreachable: recipes are compiled from the same shape
}

// numTargets sizes arrays indexed by target.
const numTargets = int(tLabels) + 1
