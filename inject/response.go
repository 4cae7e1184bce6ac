package inject

import (
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/cloudwego/base64x"
)

// responseWriter appends an AdmissionReview response in the version of the
// request. Fields are written in a fixed order so equal inputs give equal
// bytes.
type responseWriter struct {
	dst      []byte
	warnings int
	// dropped counts the warnings past maxWarnings-1, left out.
	dropped int
}

func (w *responseWriter) begin(rv *review, allowed bool) {
	w.dst = append(w.dst, `{"apiVersion":"`...)
	w.dst = append(w.dst, rv.apiVersion...)
	w.dst = append(w.dst, `","kind":"AdmissionReview","response":{"uid":"`...)
	w.dst = append(w.dst, rv.uid...) // validated by parseReview
	if allowed {
		w.dst = append(w.dst, `","allowed":true`...)
	} else {
		w.dst = append(w.dst, `","allowed":false`...)
	}
}

// patch writes patchType and the base64 patch.
func (w *responseWriter) patch(p []byte) {
	w.dst = append(w.dst, `,"patchType":"JSONPatch","patch":"`...)
	// cloudwego/base64x (sonic's own dependency) encodes with SIMD.
	n := base64x.StdEncoding.EncodedLen(len(p))
	w.dst = slices.Grow(w.dst, n)
	base64x.StdEncoding.Encode(w.dst[len(w.dst):len(w.dst)+n], p)
	w.dst = w.dst[:len(w.dst)+n]
	w.dst = append(w.dst, '"')
}

// Bounds on the text graft returns (response.go). The API server shows
// warnings to clients as HTTP headers: it drops any holding a control
// character, and past 4,096 characters in all (every webhook's and its
// own) it cuts each to 256. So each of graft's is under the 120
// characters kubectl shows on one line, at most maxWarnings are
// written, and a deny message is bounded too: a Pod's author must not
// choose how much graft says (a 1 MiB annotation value is quoted in the
// message about it).
const (
	// maxWarnings bounds the warnings of one response, the last of them
	// saying how many were left out: at most 1,190 characters, well
	// inside the API server's 4,096.
	maxWarnings = 10
	// maxMessage bounds a denial's message; a cut one ends with
	// messageCut.
	maxMessage = 1024
	// warningCut ends a warning cut at maxWarning (entry.go) characters.
	warningCut = "…"
	messageCut = "… (truncated)"
)

// status writes a denial's status.
func (w *responseWriter) status(code int, reason, message string) {
	w.statusParts(code, reason, message)
}

// statusParts writes a denial's status whose message is made of parts,
// cut at maxMessage characters.
func (w *responseWriter) statusParts(code int, reason string, message ...string) {
	w.dst = append(w.dst, `,"status":{"status":"Failure","code":`...)
	w.dst = strconv.AppendInt(w.dst, int64(code), 10)
	w.dst = append(w.dst, `,"reason":`...)
	w.dst = appendJSONString(w.dst, reason)
	w.dst = append(w.dst, `,"message":"`...)
	t := boundedText{dst: w.dst, max: maxMessage, marker: messageCut}
	for _, p := range message {
		t.add(p)
	}
	w.dst = append(t.dst, `"}`...)
}

// warn appends one warning made of parts (plain strings, escaped here),
// cut at maxWarning characters.
func (w *responseWriter) warn(parts ...string) {
	if !w.openWarning() {
		return
	}
	t := boundedText{dst: w.dst, max: maxWarning, marker: warningCut, warning: true}
	for _, p := range parts {
		t.add(p)
	}
	w.dst = append(t.dst, '"')
}

// warnRaw appends a warning that is already a quoted JSON string.
func (w *responseWriter) warnRaw(quoted []byte) {
	if len(quoted) < 2 || !w.openWarning() {
		return
	}
	t := boundedText{dst: w.dst, max: maxWarning, marker: warningCut, warning: true}
	t.addRaw(b2s(quoted[1 : len(quoted)-1]))
	w.dst = append(t.dst, '"')
}

// openWarning opens the warnings array on first use and the next
// warning's string, and reports whether it is to be written: past
// maxWarnings-1 warnings the rest are only counted, for endWarnings.
func (w *responseWriter) openWarning() bool {
	if w.warnings >= maxWarnings-1 {
		w.dropped++
		return false
	}
	if w.warnings == 0 {
		w.dst = append(w.dst, `,"warnings":[`...)
	} else {
		w.dst = append(w.dst, ',')
	}
	w.warnings++
	w.dst = append(w.dst, '"')
	return true
}

// boundedText appends text to dst as JSON string content, at most max
// characters (an escape or a UTF-8 sequence is one), cutting longer text
// to leave room for marker. For warnings, control characters (which the
// API server refuses in a warning) become U+FFFD. It reads no further
// than the cut, so a huge text costs its first max characters.
type boundedText struct {
	dst     []byte
	n       int // characters written
	max     int
	marker  string
	warning bool
	// keepAt is len(dst) when the text had room for the marker left.
	keepAt int
	cut    bool
}

// add appends s, a plain string.
func (t *boundedText) add(s string) {
	for i := 0; i < len(s) && !t.cut; {
		r, size := utf8.DecodeRuneInString(s[i:])
		t.char(r, "")
		i += size
	}
}

// addRaw appends raw, JSON string content (escaped), as it is but for
// control characters in a warning.
func (t *boundedText) addRaw(raw string) {
	for i := 0; i < len(raw) && !t.cut; {
		r, size := utf8.DecodeRuneInString(raw[i:])
		if r == '\\' {
			if i+1 >= len(raw) {
				return // not JSON string content: the plan writes none
			}
			size = 2
			switch raw[i+1] {
			case 'u':
				var ok bool
				if r, size, ok = readU(raw[i:]); !ok {
					return // not JSON string content: the plan writes none
				}
			case 'b', 'f', 'n', 'r', 't':
				r = '\n' // a control character, whichever
			default:
				r = rune(raw[i+1])
			}
		}
		enc := raw[i : i+size]
		if r == utf8.RuneError && size == 1 {
			enc = ""
		}
		t.char(r, enc)
		i += size
	}
}

// char appends the character r, written as enc (its escaped form), or
// escaped here when enc is empty.
func (t *boundedText) char(r rune, enc string) {
	if t.cut {
		return
	}
	if t.n == t.max-utf8.RuneCountInString(t.marker) {
		t.keepAt = len(t.dst)
	}
	if t.n == t.max {
		// One character too many: cut back to leave room for the marker.
		t.dst = append(t.dst[:t.keepAt], t.marker...)
		t.cut = true
		return
	}
	t.n++
	switch {
	case t.warning && unicode.IsControl(r):
		t.dst = append(t.dst, `\ufffd`...)
	case enc != "":
		t.dst = append(t.dst, enc...)
	case r == '"' || r == '\\':
		t.dst = append(t.dst, '\\', byte(r))
	case r < 0x20:
		t.dst = appendControl(t.dst, byte(r))
	default:
		t.dst = utf8.AppendRune(t.dst, r)
	}
}

// endWarnings closes the warnings array, after a last warning saying how
// many were left out.
func (w *responseWriter) endWarnings() {
	if w.dropped > 0 {
		w.dst = append(w.dst, `,"graft: `...)
		w.dst = strconv.AppendInt(w.dst, int64(w.dropped), 10)
		if w.dropped == 1 {
			w.dst = append(w.dst, ` more warning not shown"`...)
		} else {
			w.dst = append(w.dst, ` more warnings not shown"`...)
		}
		w.warnings++
		w.dropped = 0
	}
	if w.warnings > 0 {
		w.dst = append(w.dst, ']')
	}
}

func (w *responseWriter) audit(obj []byte) {
	w.dst = append(w.dst, `,"auditAnnotations":`...)
	w.dst = append(w.dst, obj...)
}

func (w *responseWriter) end() []byte {
	return append(w.dst, "}}"...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

// appendEscaped appends s escaped as JSON string content; invalid UTF-8
// becomes U+FFFD.
func appendEscaped(dst []byte, s string) []byte {
	plain := 0 // s[plain:i] needs no escaping: appended in one go
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			i++
			continue
		}
		dst = append(dst, s[plain:i]...)
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
			i++
		case c < 0x20:
			dst = appendControl(dst, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
		}
		plain = i
	}
	return append(dst, s[plain:]...)
}

func appendControl(dst []byte, c byte) []byte {
	const hex = "0123456789abcdef"
	return append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
}
