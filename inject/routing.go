package inject

import (
	"errors"
	"strings"

	"github.com/graftdev/graft/internal/names"
)

// routing is what revision selection reads of a request: the Pod's own
// graft.dev/rev label, and what a tag's split is keyed on. Strings alias
// the request body and hold raw JSON string content.
type routing struct {
	namespace    string // request.namespace, else the object's
	name         string
	generateName string
	ownerUID     string // uid of the ownerReference with controller: true
	rev          string // the Pod's graft.dev/rev label
}

// errScanDone ends a routing scan once it has what it needs.
var errScanDone = errors.New("routing scan done")

// scanRouting reads r from the review in body: request.namespace and the
// object's metadata, nothing else. It stops after the metadata when the
// namespace is known (the API server writes it before the object), so
// the Pod's spec is never touched. Text it cannot read is ErrMalformed.
func scanRouting(body string, r *routing) error {
	*r = routing{}
	sc := scanner{s: body}
	var metaDone, nsSeen bool
	err := eachKey(&sc, func(k string) error {
		if k != "request" {
			return sc.skip()
		}
		return eachKey(&sc, func(k string) error {
			switch k {
			case "namespace":
				ns, err := optString(&sc)
				if ns != "" {
					r.namespace, nsSeen = ns, true
				}
				if err == nil && metaDone {
					return errScanDone
				}
				return err
			case "object":
				metaDone = true
				return scanObjectMeta(&sc, r, nsSeen)
			}
			return sc.skip()
		})
	})
	if err != nil && err != errScanDone {
		return malformedAt(sc.i)
	}
	return nil
}

// scanObjectMeta reads the routing fields of the object's metadata. It
// ends the scan (errScanDone) after the metadata when nothing else is
// needed: the request's namespace was seen, or a controller owner found.
func scanObjectMeta(sc *scanner, r *routing, nsSeen bool) error {
	if sc.peek() != '{' {
		return sc.skip()
	}
	return eachKey(sc, func(k string) error {
		if k != "metadata" || sc.peek() != '{' {
			return sc.skip()
		}
		err := eachKey(sc, func(k string) error {
			var err error
			switch k {
			case "name":
				r.name, err = optString(sc)
			case "generateName":
				r.generateName, err = optString(sc)
			case "namespace":
				var ns string
				if ns, err = optString(sc); r.namespace == "" {
					r.namespace = ns
				}
			case "labels":
				err = eachKey(sc, func(k string) error {
					if k != names.Revision || sc.peek() != '"' {
						return sc.skip()
					}
					var err error
					r.rev, err = sc.value()
					return err
				})
			case "ownerReferences":
				if sc.isNull() {
					return nil
				}
				err = eachElem(sc, func() error { return scanOwner(sc, r) })
			default:
				err = sc.skip()
			}
			return err
		})
		if err == nil && (nsSeen || r.ownerUID != "") {
			return errScanDone
		}
		return err
	})
}

// ownerKey is how the key of metadata.ownerReferences reads in JSON.
const ownerKey = `"ownerReferences":`

// findOwner sets r.ownerUID from the Pod's controller ownerReference
// without walking the review: it looks for the first ownerReferences key
// whose value is an array of objects, and reads that array. In a review
// the API server writes, that is request.object.metadata's: the key
// cannot occur inside a string (its quotes would be escaped: a
// last-applied-configuration annotation holds \"ownerReferences\"), a
// label or annotation named ownerReferences has a string value,
// userInfo.extra (before the object) maps to arrays of strings,
// managedFields spell it "f:ownerReferences", and the API server drops
// unknown fields; oldObject comes after the object. Only the search is
// a shortcut: the array itself is read with the scanner. It reports false
// when it finds no controller owner, and the caller falls back to
// scanRouting, which reads the metadata where it is (and reports
// malformed text). On a 6 KB review this costs a fifth of scanRouting.
func findOwner(body string, r *routing) bool {
	*r = routing{}
	for from := 0; ; {
		i := indexOwnerKey(body, from)
		if i < 0 {
			return false
		}
		from = i + len(ownerKey)
		if escaped(body, i) {
			continue
		}
		sc := scanner{s: body, i: from}
		if sc.peek() != '[' {
			continue
		}
		var owner routing
		err := eachElem(&sc, func() error {
			if sc.peek() != '{' {
				return errSyntax
			}
			return scanOwner(&sc, &owner)
		})
		if err != nil {
			continue
		}
		r.ownerUID = owner.ownerUID
		return r.ownerUID != ""
	}
}

// indexOwnerKey returns where ownerKey next occurs in s at or after from,
// or -1. It looks for the key's capital R, a byte rare in Pod JSON, with
// the vectorised IndexByte: a search for the whole key starts from its
// quote, which occurs every few bytes and defeats the fast path.
func indexOwnerKey(s string, from int) int {
	const before = len(`"owner`)
	for at := from + before; at < len(s); {
		j := strings.IndexByte(s[at:], 'R')
		if j < 0 {
			return -1
		}
		if start := at + j - before; strings.HasPrefix(s[start:], ownerKey) {
			return start
		}
		at += j + 1
	}
	return -1
}

// escaped reports whether the byte at i is escaped: preceded by an odd
// run of backslashes.
func escaped(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// scanOwner reads one ownerReference, keeping its uid if it is the
// controller.
func scanOwner(sc *scanner, r *routing) error {
	var uid string
	var controller bool
	var seen keySeen
	err := eachKey(sc, func(k string) error {
		var err error
		switch k {
		case "uid":
			if err = seen.once(0, k); err == nil {
				uid, err = optString(sc)
			}
		case "controller":
			if err = seen.once(1, k); err == nil && !sc.isNull() {
				controller, err = sc.boolean()
			}
		default:
			err = sc.skip()
		}
		return err
	})
	if controller && r.ownerUID == "" {
		r.ownerUID = uid
	}
	return err
}

// bucket places the Pod in one of 100 buckets for a tag's split. Every Pod
// of one controller (a ReplicaSet's, a Job's) hashes its owner's uid, so
// they all land in the same bucket; a Pod without one hashes its
// namespace and generateName (the stem its controller-less siblings
// share), else its name.
func (r *routing) bucket() int {
	var h uint64
	switch {
	case r.ownerUID != "":
		h = fnv1a(fnvOffset, r.ownerUID)
	case r.generateName != "":
		h = fnv1a(fnv1a(fnv1a(fnvOffset, r.namespace), "/"), r.generateName)
	default:
		h = fnv1a(fnv1a(fnv1a(fnvOffset, r.namespace), "/"), r.name)
	}
	return int(mix(h) % 100)
}

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnv1a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// mix is a 64-bit finalizer (splitmix64's): FNV-1a leaves keys that differ
// only in their last bytes (owner-0, owner-1, ...) close together, and the
// modulus would see that; after mixing every input bit moves every bucket
// bit.
func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
