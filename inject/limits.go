package inject

import (
	"strconv"
	"unicode/utf8"

	"github.com/graftdev/graft/internal/names"
)

// Limits on what graft hands the API server for one Pod. A Pod whose
// injection would pass one is answered per its profile's failureMode
// with reason too-large and a warning naming the limit: never with a
// patch the API server would refuse, nor with one whose size a Pod
// author chooses.

// DefaultMaxPatchBytes is Config.MaxPatchBytes's default: 1 MiB of JSON
// patch, a response of at most about 1.4 MiB (base64) per request.
//
// Why 1 MiB: a patch only adds to the Pod, and the Pod is stored whole
// in etcd, whose default request limit is 1.5 MiB (--max-request-bytes);
// a patch larger than 1 MiB leaves too little of that for any Pod worth
// patching. Real injections are far smaller (all four built-in templates
// into a 2-container Pod: 27 KB; the status annotation's 256 KiB limit,
// below, stops a Pod with all four templates at about 700 app
// containers, about 1 MB of patch). The bound also caps the response
// buffer a request can grow in the server.
const DefaultMaxPatchBytes = 1 << 20

// maxAnnotationBytes is the API server's limit on the total size of an
// object's annotations, keys and values (apimachinery's
// TotalAnnotationSizeLimitB). A patch that takes a Pod past it makes the
// Pod invalid: refused by the API server whatever the failure policy.
const maxAnnotationBytes = 256 << 10

// tooLarge says which limit a Pod's injection passes, for the warning
// or the denial: "patch over 1024 KiB", "annotations 300 KiB > 256 KiB".
type tooLarge struct {
	what        string // "patch" or "annotations"
	size, limit int    // bytes; size 0: over limit, not measured to the end
}

// appendCause appends the limit passed, in KiB.
func (t tooLarge) appendCause(dst []byte) []byte {
	dst = append(dst, t.what...)
	if t.size == 0 {
		dst = append(dst, " over "...)
	} else {
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(kib(t.size)), 10)
		dst = append(dst, " KiB > "...)
	}
	dst = strconv.AppendInt(dst, int64(kib(t.limit)), 10)
	return append(dst, " KiB"...)
}

// kib rounds n bytes up to KiB, so a size over a limit never prints as
// the limit itself.
func kib(n int) int { return (n + 1023) / 1024 }

// annotationsTooLarge reports whether the annotations the Pod will carry
// after this request's edits pass the API server's limit while the Pod's
// own are within it (a Pod over the limit by itself is the author's to
// fix: the API server says so, graft does not claim it).
// limit is maxAnnotationBytes but in tests.
func (s *scratch) annotationsTooLarge(pl *plan, p *pod, obj string, limit int) (tooLarge, bool) {
	e := s.mapEdit(tAnnotations)
	if e == nil {
		return tooLarge{}, false
	}
	// The annotations are inside the object: most Pods cannot come near
	// the limit, whatever graft adds, and need no count.
	added := 0
	for _, in := range s.inserts[e.from:e.to] {
		if in.ref == pl.status.ref {
			added += len(names.Status) + len(s.statusOut)
		} else {
			el := pl.byRef[in.ref]
			added += len(el.name) + len(el.raw)
		}
	}
	if len(obj)+added <= limit {
		return tooLarge{}, false
	}
	before := 0
	for _, a := range p.annotationKeys {
		before += decodedLen(a.key) + decodedLen(a.value)
	}
	after := before
	for _, in := range s.inserts[e.from:e.to] {
		if in.ref == pl.status.ref {
			if old, ok := p.annotation(names.Status); ok {
				after -= decodedLen(old)
			} else {
				after += len(names.Status)
			}
			after += decodedLen(b2s(s.statusOut))
			continue
		}
		el := pl.byRef[in.ref]
		after += len(el.name) + decodedLen(b2s(el.raw[1:len(el.raw)-1]))
	}
	if before <= limit && after > limit {
		return tooLarge{what: "annotations", size: after, limit: limit}, true
	}
	return tooLarge{}, false
}

// mapEdit returns the request's edit of the map t, or nil.
func (s *scratch) mapEdit(t target) *edit {
	for i := range s.edits {
		if s.edits[i].target == t {
			return &s.edits[i]
		}
	}
	return nil
}

// decodedLen is the length in bytes of the value of raw JSON string
// content, as a JSON decoder gives it (invalid escapes count as written;
// the API server never sends them).
func decodedLen(raw string) int {
	n := 0
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			n++
			i++
			continue
		}
		if i+1 < len(raw) && raw[i+1] == 'u' {
			if r, size, ok := readU(raw[i:]); ok {
				n += utf8.RuneLen(r)
				i += size
				continue
			}
		}
		n++
		i += 2
	}
	return n
}
