package inject

import (
	"errors"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/graftdev/graft/internal/names"
)

// record is graft.dev/status as the request path reads it: every string is
// raw JSON string content (still escaped) viewing the unescaped annotation
// value held in scratch.statusIn, and the slices are reused across
// requests, so reading a status allocates nothing. ParseStatus turns it
// into the public Status.
type record struct {
	// version is 1 or 2 once parsed; 0 when the Pod has no status or it
	// could not be read (then graft owns nothing in the Pod).
	version int
	entries []recEntry
	// kept are the objects named like graft's that graft kept as the
	// Pod's own under onConflict: keep, by template (name and the
	// initContainers, containers and volumes lists).
	kept []recEntry
	// names backs every list of the record; apps the appContainers maps.
	names []string
	apps  []recApp
	// injected is the record's own flat list (graft recomputes it when
	// writing; audit compares it with the templates' lists).
	injected span
	// legacy holds a version 1 record's container, init container and
	// volume names, which version 1 did not attribute to templates.
	legacy [numKinds]span
	// plain: the text parsed holds no backslash and no control byte, so
	// its strings need no validContent check.
	plain bool
}

// listKind indexes a template entry's lists, in the order they are written.
type listKind uint8

const (
	kInits listKind = iota
	kContainers
	kVolumes
	kSecrets
	kAnnotations
	kLabels
	numKinds
)

var kindKeys = [numKinds]string{"initContainers", "containers", "volumes", "imagePullSecrets", "annotations", "labels"}

// kindHeads open each list when written (escaped, see appendRecord).
var kindHeads = [numKinds]string{`,\"initContainers\":[`, `,\"containers\":[`, `,\"volumes\":[`,
	`,\"imagePullSecrets\":[`, `,\"annotations\":[`, `,\"labels\":[`}

// span is a range of record.names or record.apps.
type span struct{ from, to int }

type recEntry struct {
	name, revision, digest string
	lists                  [numKinds]span
	apps                   span
	// podRes is the podResources object's JSON text, or "".
	podRes string
}

// recApp is what graft added to one app container: env var names and
// volume mounts (by volume name).
type recApp struct {
	name        string
	env, mounts span
}

func (r *record) reset() {
	*r = record{entries: r.entries[:0], kept: r.kept[:0], names: r.names[:0], apps: r.apps[:0]}
}

func (r *record) list(sp span) []string { return r.names[sp.from:sp.to] }

// find returns the index of the entry for template name, or -1.
func (r *record) find(name string) int {
	for i := range r.entries {
		if r.entries[i].name == name {
			return i
		}
	}
	return -1
}

// podResources returns the podResources the entry of template tmpl
// records, as JSON, or "".
func (r *record) podResources(tmpl string) string {
	if i := r.find(tmpl); i >= 0 {
		return r.entries[i].podRes
	}
	return ""
}

// credits reports whether the entry of template tmpl lists name in its
// list of kind k.
func (r *record) credits(tmpl string, k listKind, name string) bool {
	i := r.find(tmpl)
	return i >= 0 && contains(r.list(r.entries[i].lists[k]), name)
}

// hasLegacy reports whether a version 1 record names anything: such a Pod
// is upgraded, since version 1 cannot say which template added what.
func (r *record) hasLegacy() bool {
	if r.version != 1 {
		return false
	}
	if len(r.entries) > 0 {
		return true
	}
	for _, sp := range r.legacy {
		if sp.to > sp.from {
			return true
		}
	}
	return false
}

var errStatus = errors.New("not a " + names.Status + " record")

// parse reads a status value (the annotation's value, unescaped: JSON).
// Version 2 is {"version":2,"injected":[...],"templates":[{...}]};
// version 1, without a version, lists template names and the container,
// init container and volume names of all templates together. Unknown keys
// are skipped, so a later graft may add some.
func (r *record) parse(s string, plain bool) error {
	r.reset()
	r.plain = plain
	sc := scanner{s: s}
	if sc.peek() != '{' {
		return errStatus
	}
	version, objects, strs := 0, false, false
	err := eachKey(&sc, func(k string) error {
		switch k {
		case "version":
			n, err := sc.digit()
			version = n
			return err
		case "injected":
			return r.strings(&sc, &r.injected)
		case "templates":
			r.entries = r.entries[:0]
			if sc.isNull() {
				return nil
			}
			return eachElem(&sc, func() error {
				if sc.peek() == '"' {
					strs = true
					name, err := r.str(&sc)
					if err == nil && name == "" {
						err = errStatus
					}
					r.entries = append(r.entries, recEntry{name: name})
					return err
				}
				objects = true
				return r.entry(&sc)
			})
		case "kept":
			r.kept = r.kept[:0]
			if sc.isNull() {
				return nil
			}
			return eachElem(&sc, func() error {
				objects = true
				return r.keptEntry(&sc)
			})
		case "initContainers":
			return r.strings(&sc, &r.legacy[kInits])
		case "containers":
			return r.strings(&sc, &r.legacy[kContainers])
		case "volumes":
			return r.strings(&sc, &r.legacy[kVolumes])
		}
		return sc.skip()
	})
	if err == nil {
		sc.ws()
		if sc.i != len(sc.s) {
			err = errStatus
		}
	}
	switch {
	case err != nil:
	case version == 0 && !objects:
		version = 1
	case version == 2 && !strs:
		r.legacy = [numKinds]span{}
	default:
		err = errStatus
	}
	if err != nil {
		r.reset()
		return errStatus
	}
	r.version = version
	return nil
}

// entry reads one version 2 template entry.
func (r *record) entry(sc *scanner) error {
	var e recEntry
	err := eachKey(sc, func(k string) error {
		var err error
		switch k {
		case "name":
			e.name, err = r.str(sc)
		case "revision":
			e.revision, err = r.str(sc)
		case "digest":
			e.digest, err = r.str(sc)
		case "podResources":
			start := sc.i
			if sc.peek() != '{' {
				return errStatus
			}
			err = sc.skipComposite()
			e.podRes = sc.s[start:sc.i]
		case "appContainers":
			from := len(r.apps)
			err = eachKey(sc, func(c string) error {
				if !r.plain && !validContent(c) {
					return errStatus
				}
				a := recApp{name: c}
				err := eachKey(sc, func(k string) error {
					switch k {
					case "env":
						return r.strings(sc, &a.env)
					case "volumeMounts":
						return r.strings(sc, &a.mounts)
					}
					return sc.skip()
				})
				r.apps = append(r.apps, a)
				return err
			})
			e.apps = span{from, len(r.apps)}
		default:
			for i, key := range kindKeys {
				if k == key {
					return r.strings(sc, &e.lists[i])
				}
			}
			err = sc.skip()
		}
		return err
	})
	if err == nil && e.name == "" {
		err = errStatus
	}
	r.entries = append(r.entries, e)
	return err
}

// keptEntry reads one entry of a version 2 record's kept list.
func (r *record) keptEntry(sc *scanner) error {
	var e recEntry
	err := eachKey(sc, func(k string) error {
		switch k {
		case "name":
			var err error
			e.name, err = r.str(sc)
			return err
		case "initContainers", "containers", "volumes":
			return r.strings(sc, &e.lists[kindIndex(k)])
		}
		return sc.skip()
	})
	if err == nil && e.name == "" {
		err = errStatus
	}
	r.kept = append(r.kept, e)
	return err
}

// kindIndex is the list kind a record key names.
func kindIndex(key string) listKind {
	for i, k := range kindKeys {
		if k == key {
			return listKind(i)
		}
	}
	return numKinds
}

// strings reads a list of strings (or null) into names.
func (r *record) strings(sc *scanner, sp *span) error {
	from := len(r.names)
	*sp = span{from, from}
	if sc.isNull() {
		return nil
	}
	err := eachElem(sc, func() error {
		s, err := r.str(sc)
		r.names = append(r.names, s)
		return err
	})
	sp.to = len(r.names)
	return err
}

// str reads a string whose content is valid JSON string content, in its
// canonical form (see canonical): it is written back as it is.
func (r *record) str(sc *scanner) (string, error) {
	s, err := sc.value()
	if err != nil || !r.plain && !validContent(s) {
		return "", errStatus
	}
	return s, nil
}

// digit reads a one-digit number: the record's version.
func (sc *scanner) digit() (int, error) {
	c := sc.peek()
	if c < '0' || c > '9' {
		return 0, errSyntax
	}
	sc.i++
	if sc.i < len(sc.s) && (sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9' || sc.s[sc.i] == '.' || sc.s[sc.i] == 'e' || sc.s[sc.i] == 'E') {
		return 0, errSyntax
	}
	return int(c - '0'), nil
}

// isPlain reports whether s is ASCII without backslashes or control
// bytes: every string in such a text is valid JSON string content.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	return true
}

// validContent reports whether raw is valid JSON string content: no
// control bytes, valid UTF-8, and only the escapes JSON defines.
func validContent(raw string) bool {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(raw[i:])
			if r == utf8.RuneError && n == 1 {
				return false
			}
			i += n - 1
		case c == '\\':
			if i+1 >= len(raw) {
				return false
			}
			switch raw[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+6 > len(raw) || !isHex4(raw[i+2:i+6]) {
					return false
				}
				i += 5
			default:
				return false
			}
		}
	}
	return true
}

func isHex4(s string) bool {
	for i := 0; i < 4; i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// appendUnescaped appends the value of raw JSON string content, and
// reports whether that value is plain (see isPlain). It fails on escapes
// JSON does not define.
func appendUnescaped(dst []byte, raw string) ([]byte, bool, error) {
	plain := true
	for i := 0; i < len(raw); {
		j := i
		for j < len(raw) && raw[j] != '\\' {
			plain = plain && raw[j] >= 0x20 && raw[j] < utf8.RuneSelf
			j++
		}
		dst = append(dst, raw[i:j]...)
		if j == len(raw) {
			break
		}
		if j+1 >= len(raw) {
			return dst, false, errStatus
		}
		i = j + 2
		switch e := raw[j+1]; e {
		case '"', '/':
			dst = append(dst, e)
		case '\\':
			dst, plain = append(dst, e), false
		case 'b', 'f', 'n', 'r', 't':
			dst, plain = append(dst, "\b\f\n\r\t"[strings.IndexByte("bfnrt", e)]), false
		case 'u':
			r, n, ok := readU(raw[j:])
			if !ok {
				return dst, false, errStatus
			}
			dst = utf8.AppendRune(dst, r)
			plain = plain && r >= 0x20 && r != '\\'
			i = j + n
		default:
			return dst, false, errStatus
		}
	}
	return dst, plain, nil
}

// readU reads \uXXXX at the start of s, joining a surrogate pair, and
// returns the rune and how many bytes it took.
func readU(s string) (rune, int, bool) {
	if len(s) < 6 || !isHex4(s[2:6]) {
		return 0, 0, false
	}
	r := rune(hex4(s[2:6]))
	if utf16.IsSurrogate(r) && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' && isHex4(s[8:12]) {
		if pair := utf16.DecodeRune(r, rune(hex4(s[8:12]))); pair != utf8.RuneError {
			return pair, 12, true
		}
	}
	if utf16.IsSurrogate(r) {
		r = utf8.RuneError
	}
	return r, 6, true
}

func hex4(s string) uint16 {
	var v uint16
	for i := 0; i < 4; i++ {
		c := s[i]
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		v = v<<4 | uint16(c)
	}
	return v
}
