package inject

import "fmt"

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
	err := eachKey(&sc, func(k string) error {
		var err error
		switch k {
		case "apiVersion":
			rv.apiVersion, _, err = sc.str()
		case "kind":
			var kind string
			kind, _, err = sc.str()
			sawKind = err == nil && kind == "AdmissionReview"
		case "request":
			sawRequest = true
			err = parseRequest(&sc, rv, p)
		default:
			err = sc.skip()
		}
		return err
	})
	switch {
	case err != nil:
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
	return eachKey(sc, func(k string) error {
		var err error
		switch k {
		case "uid":
			rv.uid, _, err = sc.str()
		case "kind":
			err = eachKey(sc, func(k string) error {
				var err error
				switch k {
				case "group":
					rv.kindGroup, _, err = sc.str()
				case "kind":
					rv.kindKind, _, err = sc.str()
				default:
					err = sc.skip()
				}
				return err
			})
		case "subResource":
			rv.subResource, err = optString(sc)
		case "namespace":
			rv.namespace, err = optString(sc)
		case "name":
			rv.name, err = optString(sc)
		case "operation":
			var op string
			op, _, err = sc.str()
			rv.operation = parseOperation(op)
		case "dryRun":
			if !sc.isNull() {
				rv.dryRun, err = sc.boolean()
			}
		case "object":
			err = readObject(sc, rv, p)
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
