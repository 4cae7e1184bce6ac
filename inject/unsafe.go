package inject

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/bytedance/sonic/ast"
)

// Every use of package unsafe in the engine is in this file: zero-copy
// views between the request body and strings, and a mirror of sonic's
// ast.Node. Each function states the invariant that makes it sound.

// b2s views b as a string without copying. Sound because the engine only
// reads the request body, and only during a call: nothing writes to b
// while the string lives, and what the caches keep past the call is
// copied (keys by string(key), annotation values by strings.Clone, a
// status value into its readStatus, whose bytes nothing writes again;
// template names come from the template set). The scratch's status
// buffers it views are only appended to while the views live, and reset
// between requests.
func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// s2b views s as bytes without copying. Sound because it is only given
// strings that are views of the request body (b2s), so the bytes are the
// caller's own: Result's UID, Namespace and Name, documented as valid
// until the caller reuses the body. Never give it a string constant,
// whose bytes are read-only memory.
func s2b(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// offsetIn returns where inner starts within outer, and false unless
// inner lies wholly inside outer. Sound because it only subtracts
// addresses as integers and never turns an integer back into a pointer;
// a string from elsewhere in memory fails the range check.
func offsetIn(outer, inner string) (int, bool) {
	off := uintptr(unsafe.Pointer(unsafe.StringData(inner))) - uintptr(unsafe.Pointer(unsafe.StringData(outer)))
	if off > uintptr(len(outer)) || uintptr(len(inner)) > uintptr(len(outer))-off {
		return 0, false
	}
	return int(off), true
}

// sonicNode mirrors ast.Node as sonic declares it (ast/node.go):
//
//	type Node struct {
//		t types.ValueType // int64
//		l uint
//		p unsafe.Pointer
//		m *sync.RWMutex
//	}
//
// Node.Raw gives the same span as rawSpan but makes the node escape to
// the heap, one allocation per skipped object or array. The mirror is held
// to sonic three ways: the size assertion below fails the build, New
// fails (checkSonicNode) rather than misread memory, and the tests pin the
// sonic version it was verified against (sonicVerified). Beyond Go 1.28
// the build fails on purpose (unsafe_go128.go).
type sonicNode struct {
	t int64
	l uint
	p unsafe.Pointer
	m *sync.RWMutex
}

// sonicVerified is the sonic release the mirror was checked against.
// Moving sonic means reading its ast/node.go again, then updating this.
const sonicVerified = "v1.15.5"

// sonicRawFlag is sonic's _V_RAW: the node is unparsed text, and p and l
// are the pointer and length of its span in the searched string.
const sonicRawFlag = 1 << 8

// The mirror and ast.Node must be the same size: one of these array
// lengths is negative, and the build fails, if they are not.
var (
	_ [unsafe.Sizeof(sonicNode{}) - unsafe.Sizeof(ast.Node{})]struct{}
	_ [unsafe.Sizeof(ast.Node{}) - unsafe.Sizeof(sonicNode{})]struct{}
)

// rawSpan returns the text of a node that a Searcher returned unparsed.
// Sound because the mirror matches ast.Node (checkSonicNode passed in
// New) and, for a raw node, sonic sets p and l to a span of the string
// it searched, which the caller holds.
func rawSpan(n *ast.Node) (string, bool) {
	m := (*sonicNode)(unsafe.Pointer(n))
	if m.t&sonicRawFlag == 0 || m.p == nil {
		return "", false
	}
	return unsafe.String((*byte)(m.p), m.l), true
}

// checkSonicNode verifies what the compiler cannot: that ast.Node still
// has the mirror's fields (names, offsets, sizes, kinds) and that a raw
// node's span reads as sonic's own Raw does. It is cheap and New runs it,
// so a sonic that changed Node fails to build an Engine instead of
// misreading memory on the request path.
func checkSonicNode() error {
	if err := sameLayout(reflect.TypeFor[ast.Node](), reflect.TypeFor[sonicNode]()); err != nil {
		return fmt.Errorf("sonic's ast.Node no longer matches the mirror in inject/unsafe.go: %w", err)
	}
	const probe = `[{"a":1}]`
	sr := ast.NewSearcher(probe)
	sr.ValidateJSON = false
	n, err := sr.GetByPath(0)
	if err != nil {
		return fmt.Errorf("sonic probe: %w", err)
	}
	got, ok := rawSpan(&n)
	want, err := n.Raw()
	if !ok || err != nil || got != want || got != probe[1:len(probe)-1] {
		return errors.New("sonic's raw ast.Node no longer reads as the mirror in inject/unsafe.go expects")
	}
	return nil
}

// sameLayout reports how mirror differs from theirs, field by field.
func sameLayout(theirs, mirror reflect.Type) error {
	if theirs.Kind() != reflect.Struct || mirror.Kind() != reflect.Struct {
		return fmt.Errorf("%s and %s must both be structs", theirs, mirror)
	}
	if theirs.Size() != mirror.Size() || theirs.NumField() != mirror.NumField() {
		return fmt.Errorf("%s has %d fields in %d bytes, the mirror %d in %d",
			theirs, theirs.NumField(), theirs.Size(), mirror.NumField(), mirror.Size())
	}
	for i := range theirs.NumField() {
		r, m := theirs.Field(i), mirror.Field(i)
		if r.Name != m.Name || r.Offset != m.Offset || r.Type.Size() != m.Type.Size() || r.Type.Kind() != m.Type.Kind() {
			return fmt.Errorf("field %d is %s %s (offset %d, size %d), the mirror has %s %s (offset %d, size %d)",
				i, r.Name, r.Type.Kind(), r.Offset, r.Type.Size(), m.Name, m.Type.Kind(), m.Offset, m.Type.Size())
		}
	}
	return nil
}
