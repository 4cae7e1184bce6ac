package inject

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/wI2L/jsondiff"
)

// The patch is computed by jsondiff on a skeleton of the Pod: only the
// lists and maps graft adds to, with existing elements as opaque tokens and
// graft's elements as reference tokens. jsondiff (with LCS, so an insert at
// index 0 is one op) decides the minimal ops once per distinct skeleton
// shape; the ops are cached as templates and replayed with the elements'
// raw bytes, so the request path does not diff, marshal or allocate.

// opTemplate is one cached patch operation: everything up to the value, and
// the value as literal bytes and element references.
type opTemplate struct {
	head []byte // {"op":"add","path":"/spec/initContainers/0","value":
	segs []segment
}

type segment struct {
	lit []byte
	ref int // element ref when lit is nil
}

type patchTemplate struct{ ops []opTemplate }

// shapeCache maps a skeleton shape key to its patch template. It is bounded:
// past maxShapes new shapes are diffed per request and not stored.
type shapeCache struct {
	mu sync.RWMutex
	m  map[string]*patchTemplate
}

const maxShapes = 4096

func (c *shapeCache) get(key []byte) *patchTemplate {
	c.mu.RLock()
	pt := c.m[string(key)]
	c.mu.RUnlock()
	return pt
}

func (c *shapeCache) put(key []byte, pt *patchTemplate) {
	c.mu.Lock()
	if len(c.m) < maxShapes {
		c.m[string(key)] = pt
	}
	c.mu.Unlock()
}

// shapeKey encodes everything that decides the ops: the plan and each
// edit's target, state, length and inserts.
func shapeKey(dst []byte, planID uint32, s *scratch) []byte {
	dst = binary.AppendUvarint(dst, uint64(planID))
	for _, e := range s.edits {
		dst = append(dst, byte(e.target), byte(e.state))
		dst = binary.AppendUvarint(dst, uint64(e.index))
		dst = binary.AppendUvarint(dst, uint64(e.length))
		dst = binary.AppendUvarint(dst, uint64(e.to-e.from))
		for _, in := range s.inserts[e.from:e.to] {
			dst = binary.AppendUvarint(dst, uint64(in.pos))
			dst = binary.AppendUvarint(dst, uint64(in.ref))
			if in.replace {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		}
	}
	return dst
}

// pointer returns the JSON Pointer of an edit's list or map.
func (e *edit) pointer() string {
	switch e.target {
	case tInits:
		return "/spec/initContainers"
	case tContainers:
		return "/spec/containers"
	case tVolumes:
		return "/spec/volumes"
	case tSecrets:
		return "/spec/imagePullSecrets"
	case tEnv:
		return "/spec/containers/" + strconv.Itoa(e.index) + "/env"
	case tMounts:
		return "/spec/containers/" + strconv.Itoa(e.index) + "/volumeMounts"
	case tAnnotations:
		return "/metadata/annotations"
	case tLabels:
		return "/metadata/labels"
	}
	return ""
}

func (e *edit) isMap() bool { return e.target == tAnnotations || e.target == tLabels }

// tokenPrefix starts a reference token; NUL never occurs in Kubernetes
// names, so a token cannot collide with a real value.
const tokenPrefix = "\x00graft:"

// buildTemplate diffs the skeleton for the current edits with jsondiff and
// turns the ops into a template. It runs once per shape.
func buildTemplate(pl *plan, s *scratch) (*patchTemplate, error) {
	elems := pl.byRef
	src := map[string]any{}
	dst := map[string]any{}
	for i, e := range s.edits {
		k := strconv.Itoa(i)
		ins := s.inserts[e.from:e.to]
		if e.isMap() {
			if e.state == isNull {
				src[k] = nil
			}
			old, want := map[string]any{}, map[string]any{}
			for _, in := range ins {
				name := elems[in.ref].name
				if in.replace {
					old[name] = "\x00old"
				}
				want[name] = tokenPrefix + strconv.Itoa(in.ref)
			}
			if e.state == present {
				src[k] = old
			}
			dst[k] = want
			continue
		}
		switch e.state {
		case isNull:
			src[k] = nil
		case present:
			cur := make([]any, e.length)
			for j := range cur {
				cur[j] = "\x00x"
			}
			src[k] = cur
		}
		want := make([]any, e.length+len(ins))
		if e.state != present {
			want = want[:len(ins)]
		}
		filled := make([]bool, len(want))
		for _, in := range ins {
			if in.pos >= len(want) || filled[in.pos] {
				return nil, fmt.Errorf("internal: insert position %d out of order in %s", in.pos, e.pointer())
			}
			want[in.pos] = tokenPrefix + strconv.Itoa(in.ref)
			filled[in.pos] = true
		}
		for j := range want {
			if !filled[j] {
				want[j] = "\x00x"
			}
		}
		dst[k] = want
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
	pt := &patchTemplate{}
	for _, op := range ops {
		if op.Type != jsondiff.OperationAdd && op.Type != jsondiff.OperationReplace {
			return nil, fmt.Errorf("internal: skeleton diff produced %s at %s", op.Type, op.Path)
		}
		// Map the skeleton path /<edit>/<rest> onto the Pod.
		rest := strings.TrimPrefix(op.Path, "/")
		idx, tail, _ := strings.Cut(rest, "/")
		ei, err := strconv.Atoi(idx)
		if err != nil || ei >= len(s.edits) {
			return nil, fmt.Errorf("internal: unexpected skeleton path %q", op.Path)
		}
		path := s.edits[ei].pointer()
		if tail != "" {
			path += "/" + tail
		}
		head := []byte(`{"op":"` + op.Type + `","path":`)
		head = appendJSONString(head, path)
		head = append(head, `,"value":`...)
		val, err := json.Marshal(op.Value)
		if err != nil {
			return nil, fmt.Errorf("internal: %w", err)
		}
		segs, err := splitTokens(val)
		if err != nil {
			return nil, err
		}
		pt.ops = append(pt.ops, opTemplate{head: head, segs: segs})
	}
	return pt, nil
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

// appendPatch replays pt with pl's element bytes.
func appendPatch(dst []byte, pt *patchTemplate, pl *plan) []byte {
	dst = append(dst, '[')
	for i := range pt.ops {
		op := &pt.ops[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, op.head...)
		for _, sg := range op.segs {
			if sg.lit != nil {
				dst = append(dst, sg.lit...)
			} else {
				dst = append(dst, pl.byRef[sg.ref].raw...)
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}
