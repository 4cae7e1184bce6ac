package inject

import (
	"slices"

	"github.com/cloudwego/base64x"
	"strconv"
	"unicode/utf8"
)

// responseWriter appends an AdmissionReview response in the version of the
// request. Fields are written in a fixed order so equal inputs give equal
// bytes.
type responseWriter struct {
	dst      []byte
	warnings int
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

// status writes a denial's status.
func (w *responseWriter) status(code int, reason, message string) {
	w.dst = append(w.dst, `,"status":{"status":"Failure","code":`...)
	w.dst = strconv.AppendInt(w.dst, int64(code), 10)
	w.dst = append(w.dst, `,"reason":`...)
	w.dst = appendJSONString(w.dst, reason)
	w.dst = append(w.dst, `,"message":`...)
	w.dst = appendJSONString(w.dst, message)
	w.dst = append(w.dst, '}')
}

// statusParts writes a denial's status whose message is made of parts.
func (w *responseWriter) statusParts(code int, reason string, message ...string) {
	w.dst = append(w.dst, `,"status":{"status":"Failure","code":`...)
	w.dst = strconv.AppendInt(w.dst, int64(code), 10)
	w.dst = append(w.dst, `,"reason":`...)
	w.dst = appendJSONString(w.dst, reason)
	w.dst = append(w.dst, `,"message":"`...)
	for _, p := range message {
		w.dst = appendEscaped(w.dst, p)
	}
	w.dst = append(w.dst, `"}`...)
}

// warn opens the warnings array on first use and appends one warning made
// of parts (plain strings, escaped here).
func (w *responseWriter) warn(parts ...string) {
	if w.warnings == 0 {
		w.dst = append(w.dst, `,"warnings":[`...)
	} else {
		w.dst = append(w.dst, ',')
	}
	w.warnings++
	w.dst = append(w.dst, '"')
	start := len(w.dst)
	for _, p := range parts {
		w.dst = appendEscaped(w.dst, p)
	}
	w.dst = cutWarning(w.dst, start)
	w.dst = append(w.dst, '"')
}

// cutWarning cuts the escaped warning text dst[start:] to maxWarning
// characters (an escape sequence or a UTF-8 sequence is one), marking the
// cut, as shortWarning does for the plan's warnings.
func cutWarning(dst []byte, start int) []byte {
	if len(dst)-start <= maxWarning {
		return dst
	}
	i, n := start, 0
	for i < len(dst) && n < maxWarning-1 {
		switch c := dst[i]; {
		case c == '\\' && i+1 < len(dst) && dst[i+1] == 'u':
			i += 6
		case c == '\\':
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			_, size := utf8.DecodeRune(dst[i:])
			i += size
		}
		n++
	}
	if i >= len(dst) {
		return dst
	}
	return append(dst[:i], "…"...)
}

// warnRaw appends a warning that is already a quoted JSON string.
func (w *responseWriter) warnRaw(quoted []byte) {
	if w.warnings == 0 {
		w.dst = append(w.dst, `,"warnings":[`...)
	} else {
		w.dst = append(w.dst, ',')
	}
	w.warnings++
	w.dst = append(w.dst, quoted...)
}

func (w *responseWriter) endWarnings() {
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
