package inject

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bytedance/sonic/ast"
)

// errSyntax is returned by the scanner for text that is not JSON where the
// engine reads it. Callers wrap it with ErrMalformed and a location.
var errSyntax = errors.New("invalid JSON")

// errBudget is returned when the request's budget ran out mid-way.
var errBudget = errors.New("budget exceeded")

// scanner walks JSON text in place without decoding it: the engine reads a
// few keys and spans of an AdmissionReview, never the whole document.
//
// Why our own tokenizer: sonic's public look-ups return an ast.Node whose
// accessors make it escape (one allocation per look-up) and hide byte
// offsets, which the patch needs. So the tokenizer here handles keys and
// scalars, and every nested object or array graft does not need is skipped
// by sonic's native (SIMD) skipper via skipComposite.
type scanner struct {
	s string
	i int
	// b, when set, is checked per array element (errBudget once spent).
	b *budget
}

func (sc *scanner) ws() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (sc *scanner) peek() byte {
	// The API server writes no whitespace: one comparison is the usual cost.
	if sc.i < len(sc.s) && sc.s[sc.i] > ' ' {
		return sc.s[sc.i]
	}
	sc.ws()
	if sc.i < len(sc.s) {
		return sc.s[sc.i]
	}
	return 0
}

// str reads a string and returns its raw content (between the quotes, still
// escaped) and whether it holds escapes. It tests eight bytes at a time
// for a quote or a backslash (SWAR), then finishes byte by byte: Pod
// strings are mostly short, where a call to a vectorised search costs more
// than it saves.
func (sc *scanner) str() (raw string, escaped bool, err error) {
	if sc.peek() != '"' {
		return "", false, errSyntax
	}
	s := sc.s
	start := sc.i + 1
	j := start
	for {
		for j+8 <= len(s) && !hasQuoteOrBackslash(load64(s, j)) {
			j += 8
		}
		for ; j < len(s); j++ {
			if c := s[j]; c == '"' || c == '\\' {
				break
			}
		}
		if j >= len(s) {
			return "", false, errSyntax
		}
		if s[j] == '"' {
			sc.i = j + 1
			return s[start:j], escaped, nil
		}
		escaped = true
		j += 2 // the backslash and the byte it escapes
	}
}

// load64 reads s[i:i+8] as a little-endian word. The compiler merges the
// eight byte loads into one, so this needs no unsafe.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// hasQuoteOrBackslash reports whether any byte of w is '"' or '\\'
// (the classic "has zero byte" test applied to w XOR each pattern).
func hasQuoteOrBackslash(w uint64) bool {
	q := w ^ (ones * '"')
	b := w ^ (ones * '\\')
	return ((q-ones)&^q|(b-ones)&^b)&highs != 0
}

// skip moves past one value of any type.
func (sc *scanner) skip() error {
	switch sc.peek() {
	case '"':
		_, _, err := sc.str()
		return err
	case '{', '[':
		return sc.skipComposite()
	case 't':
		return sc.lit("true")
	case 'f':
		return sc.lit("false")
	case 'n':
		return sc.lit("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		j := sc.i + 1
		for j < len(sc.s) && strings.IndexByte("0123456789+-.eE", sc.s[j]) >= 0 {
			j++
		}
		sc.i = j
		return nil
	}
	return errSyntax
}

func (sc *scanner) lit(word string) error {
	if !strings.HasPrefix(sc.s[sc.i:], word) {
		return errSyntax
	}
	sc.i += len(word)
	return nil
}

// isNull consumes a null literal if one is next.
func (sc *scanner) isNull() bool {
	if sc.peek() == 'n' && strings.HasPrefix(sc.s[sc.i:], "null") {
		sc.i += 4
		return true
	}
	return false
}

// boolean reads true or false.
func (sc *scanner) boolean() (bool, error) {
	switch sc.peek() {
	case 't':
		return true, sc.lit("true")
	case 'f':
		return false, sc.lit("false")
	}
	return false, errSyntax
}

// skipComposite skips the object or array at sc.i with sonic's native
// skipper, which does not allocate when called with an empty path. (A Go
// skipper for small objects was measured and lost even below 128 bytes.)
func (sc *scanner) skipComposite() error {
	sr := ast.NewSearcher(sc.s[sc.i:])
	sr.ValidateJSON = false
	n, err := sr.GetByPath()
	if err != nil {
		return errSyntax
	}
	raw, ok := rawSpan(&n)
	if !ok || len(raw) == 0 {
		return errSyntax
	}
	// The value must start where the scanner stands and end inside the
	// text: anything else means sonic read past garbage.
	start, ok := offsetIn(sc.s, raw)
	if !ok || start != sc.i {
		return errSyntax
	}
	sc.i = start + len(raw)
	return nil
}

// Iteration over objects and arrays. Usage:
//
//	if err := sc.open('{'); err != nil { ... }
//	for first := true; ; first = false {
//		more, err := sc.next('}', first)
//		if err != nil || !more { ... }
//		key, _, err := sc.key()
//		...read or skip the value...
//	}
func (sc *scanner) open(c byte) error {
	if sc.peek() != c {
		return errSyntax
	}
	sc.i++
	return nil
}

// next reports whether another member follows, consuming the separator or
// the closing bracket.
func (sc *scanner) next(closer byte, first bool) (bool, error) {
	c := sc.peek()
	if c == closer {
		sc.i++
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, errSyntax
		}
		sc.i++
	}
	return true, nil
}

// key reads an object key and its colon.
func (sc *scanner) key() (string, bool, error) {
	k, esc, err := sc.str()
	if err != nil {
		return "", false, err
	}
	if sc.peek() != ':' {
		return "", false, errSyntax
	}
	sc.i++
	return k, esc, nil
}

// eachKey calls fn for each key of the object at sc, with sc positioned at
// the value; fn must consume it. A null object has no keys. Keys are
// passed canonical (see canonical): the engine reads a key as a JSON
// decoder does, however it is escaped.
func eachKey(sc *scanner, fn func(key string) error) error {
	if sc.isNull() {
		return nil
	}
	if err := sc.open('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		more, err := sc.next('}', first)
		if err != nil || !more {
			return err
		}
		k, esc, err := sc.key()
		if err == nil && esc {
			k, err = canonical(k)
		}
		if err != nil {
			return err
		}
		if err := fn(k); err != nil {
			return err
		}
	}
}

// eachElem calls fn for each element of the array at sc; fn must consume it.
func eachElem(sc *scanner, fn func() error) error {
	if err := sc.open('['); err != nil {
		return err
	}
	for first := true; ; first = false {
		more, err := sc.next(']', first)
		if err != nil || !more {
			return err
		}
		if sc.b != nil && sc.b.spent() {
			return errBudget
		}
		if err := fn(); err != nil {
			return err
		}
	}
}

// member reads the presence of a map or list value, consuming a null.
func member(sc *scanner) presence {
	if sc.isNull() {
		return isNull
	}
	return present
}

// optString reads a string or null, canonical (value's body, spelled out
// to spare a call per name read).
func optString(sc *scanner) (string, error) {
	if sc.isNull() {
		return "", nil
	}
	raw, esc, err := sc.str()
	if esc && err == nil {
		return canonical(raw)
	}
	return raw, err
}

// value reads a string, canonical.
func (sc *scanner) value() (string, error) {
	raw, esc, err := sc.str()
	if esc && err == nil {
		return canonical(raw)
	}
	return raw, err
}

// canonical returns raw JSON string content in the one form the engine
// compares strings in: its value escaped as appendEscaped escapes (only
// quotes, backslashes and control characters, as \u00xx). A string
// without escapes is so already, and so is every name and key the API
// server writes; only a string with other escapes ("\u006Eamespace",
// "\/", or the \u0026 Go's encoder writes for &) is decoded and written
// again, which allocates. So a key or value is the same for the engine
// as for a JSON decoder, however a client escapes it, and the common
// path costs nothing.
func canonical(raw string) (string, error) {
	if isCanonical(raw) {
		return raw, nil
	}
	v, _, err := appendUnescaped(nil, raw)
	if err != nil {
		return "", errSyntax
	}
	return string(appendEscaped(nil, b2s(v))), nil
}

// isCanonical reports whether every escape in raw is one appendEscaped
// writes: \", \\ or \u00xx (lower-case hex) for a control character.
func isCanonical(raw string) bool {
	for i := strings.IndexByte(raw, '\\'); i >= 0; {
		if i+1 >= len(raw) {
			return false
		}
		switch raw[i+1] {
		case '"', '\\':
			i += 2
		case 'u':
			if i+6 > len(raw) || raw[i+2] != '0' || raw[i+3] != '0' || raw[i+4] != '0' && raw[i+4] != '1' || !isLowerHex(raw[i+5]) {
				return false
			}
			i += 6
		default:
			return false
		}
		j := strings.IndexByte(raw[i:], '\\')
		if j < 0 {
			return true
		}
		i += j
	}
	return true
}

func isLowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// duplicateKeyError is an object that repeats a key the engine reads. A
// JSON decoder keeps the last; the API server never sends one (it writes
// objects it holds decoded). The engine refuses such a request as
// malformed rather than guess which member a client meant.
type duplicateKeyError struct{ key string }

func (e *duplicateKeyError) Error() string { return fmt.Sprintf("duplicate key %q", e.key) }

// keySeen tracks which of an object's known keys were read, each by the
// bit its caller gives it.
type keySeen uint32

// once marks the key of bit as read, and fails if it was already.
func (ks *keySeen) once(bit uint, key string) error {
	if *ks&(1<<bit) != 0 {
		return &duplicateKeyError{key: key}
	}
	*ks |= 1 << bit
	return nil
}
