package inject

import (
	"errors"
	"fmt"
)

// review is what the engine reads of an AdmissionReview envelope. Every
// string aliases the request body and holds raw (still escaped) JSON string
// content.
type review struct {
	apiVersion  string
	uid         string
	kindGroup   string
	kindKind    string
	subResource string
	namespace   string
	name        string
	operation   Operation
	dryRun      bool
	// object is the byte span of request.object; empty when absent or null.
	object string
}

const (
	admissionV1      = "admission.k8s.io/v1"
	admissionV1beta1 = "admission.k8s.io/v1beta1"
)

// parseReview reads the envelope. It walks the top level and request object
// key by key; everything else is skipped natively.
// When p is not nil and the envelope already reads as a Pod CREATE where
// the object starts (the API server writes operation and kind first), the
// Pod's metadata is read in place rather than skipped and read again.
func parseReview(body string, rv *review, p *pod) error {
	*rv = review{}
	sc := scanner{s: body}
	if sc.peek() != '{' {
		return fmt.Errorf("%w: body is not a JSON object", ErrMalformed)
	}
	var sawKind, sawRequest bool
	var seen keySeen
	err := eachKey(&sc, func(k string) error {
		var err error
		switch k {
		case "apiVersion":
			if err = seen.once(0, k); err == nil {
				rv.apiVersion, err = sc.value()
			}
		case "kind":
			var kind string
			if err = seen.once(1, k); err == nil {
				kind, err = sc.value()
			}
			sawKind = err == nil && kind == "AdmissionReview"
		case "request":
			sawRequest = true
			if err = seen.once(2, k); err == nil {
				err = parseRequest(&sc, rv, p)
			}
		default:
			err = sc.skip()
		}
		return err
	})
	if err == nil {
		// Nothing may follow the review: the API server sends nothing
		// after it, and bytes there are not JSON.
		if sc.ws(); sc.i != len(sc.s) {
			return fmt.Errorf("%w: %d bytes after the AdmissionReview, at byte %d", ErrMalformed, len(sc.s)-sc.i, sc.i)
		}
	}
	switch {
	case err != nil:
		if dup, ok := errors.AsType[*duplicateKeyError](err); ok {
			return fmt.Errorf("%w: %w, before byte %d", ErrMalformed, dup, sc.i)
		}
		return malformedAt(sc.i)
	case rv.apiVersion != admissionV1 && rv.apiVersion != admissionV1beta1:
		return fmt.Errorf("%w: apiVersion must be %s or %s", ErrMalformed, admissionV1, admissionV1beta1)
	case !sawKind:
		return fmt.Errorf("%w: kind must be AdmissionReview", ErrMalformed)
	case !sawRequest:
		return fmt.Errorf("%w: request is missing", ErrMalformed)
	case !validUID(rv.uid):
		return fmt.Errorf("%w: request.uid is missing or invalid", ErrMalformed)
	}
	return nil
}

func malformedAt(off int) error {
	return fmt.Errorf("%w: invalid JSON near byte %d", ErrMalformed, off)
}

// parseRequest reads request; a null request reads as empty (and fails
// the uid check).
func parseRequest(sc *scanner, rv *review, p *pod) error {
	var seen keySeen
	return eachKey(sc, func(k string) error {
		var err error
		switch k {
		case "uid":
			if err = seen.once(0, k); err == nil {
				rv.uid, err = sc.value()
			}
		case "kind":
			if err = seen.once(1, k); err != nil {
				return err
			}
			var kindSeen keySeen
			err = eachKey(sc, func(k string) error {
				var err error
				switch k {
				case "group":
					if err = kindSeen.once(0, k); err == nil {
						rv.kindGroup, err = sc.value()
					}
				case "kind":
					if err = kindSeen.once(1, k); err == nil {
						rv.kindKind, err = sc.value()
					}
				default:
					err = sc.skip()
				}
				return err
			})
		case "subResource":
			if err = seen.once(2, k); err == nil {
				rv.subResource, err = optString(sc)
			}
		case "namespace":
			if err = seen.once(3, k); err == nil {
				rv.namespace, err = optString(sc)
			}
		case "name":
			if err = seen.once(4, k); err == nil {
				rv.name, err = optString(sc)
			}
		case "operation":
			var op string
			if err = seen.once(5, k); err == nil {
				op, err = sc.value()
			}
			rv.operation = parseOperation(op)
		case "dryRun":
			if err = seen.once(6, k); err == nil && !sc.isNull() {
				rv.dryRun, err = sc.boolean()
			}
		case "object":
			if err = seen.once(7, k); err == nil {
				err = readObject(sc, rv, p)
			}
		default:
			err = sc.skip()
		}
		return err
	})
}

// readObject records request.object's span. When p is not nil and the
// envelope so far reads as a Pod CREATE, it reads the Pod's metadata on
// the way (parsePodMetaAt), which spares a second pass over the object.
func readObject(sc *scanner, rv *review, p *pod) error {
	if sc.isNull() {
		return nil
	}
	start := sc.i
	if sc.peek() != '{' {
		return errSyntax
	}
	var err error
	if p != nil && decideEnvelope(rv) == ReasonNone {
		if err = parsePodMetaAt(sc, p); err != nil {
			// Report the Pod's problem where the Pod is read.
			p.metaRead = false
			sc.i = start
			err = sc.skipComposite()
		}
	} else {
		err = sc.skipComposite()
	}
	rv.object = sc.s[start:sc.i]
	return err
}

func parseOperation(op string) Operation {
	switch op {
	case "CREATE":
		return OpCreate
	case "UPDATE":
		return OpUpdate
	case "DELETE":
		return OpDelete
	case "CONNECT":
		return OpConnect
	}
	return OpUnknown
}

// validUID accepts what the API server sends (a UUID) and anything else
// that is safe to echo verbatim inside a JSON string: no control bytes, no
// escapes, bounded length.
func validUID(uid string) bool {
	if uid == "" || len(uid) > 128 {
		return false
	}
	for i := 0; i < len(uid); i++ {
		if c := uid[i]; c < 0x20 || c == '\\' || c == '"' || c >= 0x7f {
			return false
		}
	}
	return true
}
