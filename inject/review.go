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
	if err := sc.open('{'); err != nil {
		return fmt.Errorf("%w: body is not a JSON object", ErrMalformed)
	}
	var sawKind, sawRequest bool
	for first := true; ; first = false {
		more, err := sc.next('}', first)
		if err != nil {
			return malformedAt(sc.i)
		}
		if !more {
			break
		}
		k, _, err := sc.key()
		if err != nil {
			return malformedAt(sc.i)
		}
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
		if err != nil {
			return malformedAt(sc.i)
		}
	}
	switch {
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

func parseRequest(sc *scanner, rv *review, p *pod) error {
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
		k, _, err := sc.key()
		if err != nil {
			return err
		}
		switch k {
		case "uid":
			rv.uid, _, err = sc.str()
		case "kind":
			err = parseGVK(sc, rv)
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
			if sc.isNull() {
				break
			}
			start := sc.i
			if sc.peek() != '{' {
				return errSyntax
			}
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
		default:
			err = sc.skip()
		}
		if err != nil {
			return err
		}
	}
}

func parseGVK(sc *scanner, rv *review) error {
	if err := sc.open('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		more, err := sc.next('}', first)
		if err != nil || !more {
			return err
		}
		k, _, err := sc.key()
		if err != nil {
			return err
		}
		switch k {
		case "group":
			rv.kindGroup, _, err = sc.str()
		case "kind":
			rv.kindKind, _, err = sc.str()
		default:
			err = sc.skip()
		}
		if err != nil {
			return err
		}
	}
}

// optString reads a string or null.
func optString(sc *scanner) (string, error) {
	if sc.isNull() {
		return "", nil
	}
	s, _, err := sc.str()
	return s, err
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
