package inject

import (
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// Operating systems. A Pod for another operating system than its
// templates support is skipped (ReasonOS): for spec.os.name: windows the
// API server refuses every Linux-only field (runAsUser, capabilities,
// seccompProfile, ...) in any container, and a Pod bound by node selector
// or affinity to Windows nodes could not run a Linux sidecar.

// osSet is a set of operating systems, as a Pod may target them.
type osSet uint8

const (
	osLinux osSet = 1 << iota
	osWindows
	// osOther is any other name: Kubernetes knows only linux and windows.
	osOther
	// osAny is a Pod that does not say.
	osAny = osLinux | osWindows | osOther
)

// osOf is the set of one operating system name.
func osOf(name string) osSet {
	switch name {
	case templates.OSLinux:
		return osLinux
	case templates.OSWindows:
		return osWindows
	}
	return osOther
}

// String names the set's systems, for messages.
func (s osSet) String() string {
	out := ""
	for _, o := range [...]struct {
		bit  osSet
		name string
	}{{osLinux, templates.OSLinux}, {osWindows, templates.OSWindows}, {osOther, "other"}} {
		if s&o.bit != 0 {
			if out != "" {
				out += ", "
			}
			out += o.name
		}
	}
	if out == "" {
		return "none"
	}
	return out
}

// podOS is what a Pod says about the operating system it runs on. Each
// field is osAny when the Pod does not constrain it.
type podOS struct {
	// name is spec.os.name.
	name osSet
	// selector is spec.nodeSelector's kubernetes.io/os.
	selector osSet
	// affinity is what the required node affinity allows: the union over
	// its terms (ORed) of what each term's kubernetes.io/os expressions
	// (ANDed) allow.
	affinity osSet
}

func (o *podOS) reset() { *o = podOS{name: osAny, selector: osAny, affinity: osAny} }

// targets is every operating system the Pod may run on.
func (o *podOS) targets() osSet { return o.name & o.selector & o.affinity }

// why names the field that rules out every system in supported, for
// graft explain.
func (o *podOS) why(supported osSet) string {
	switch {
	case o.name&supported == 0:
		return "spec.os.name"
	case o.selector&supported == 0:
		return "spec.nodeSelector " + names.OSLabel
	case o.affinity&supported == 0:
		return "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution on " + names.OSLabel
	}
	return "spec.os.name, spec.nodeSelector and spec.affinity together"
}

// parseOSName reads spec.os: {name: ...}.
func parseOSName(sc *scanner, o *podOS) error {
	return eachKey(sc, func(k string) error {
		if k != "name" || sc.peek() != '"' {
			return sc.skip()
		}
		v, err := value(sc)
		o.name = osOf(v)
		return err
	})
}

// parseNodeSelector reads spec.nodeSelector's kubernetes.io/os.
func parseNodeSelector(sc *scanner, o *podOS) error {
	return eachKey(sc, func(k string) error {
		if k != names.OSLabel || sc.peek() != '"' {
			return sc.skip()
		}
		v, err := value(sc)
		o.selector = osOf(v)
		return err
	})
}

// parseAffinity reads the required node affinity's terms from
// spec.affinity; everything else in it is skipped.
func parseAffinity(sc *scanner, o *podOS) error {
	return eachKey(sc, func(k string) error {
		if k != "nodeAffinity" {
			return sc.skip()
		}
		return eachKey(sc, func(k string) error {
			if k != "requiredDuringSchedulingIgnoredDuringExecution" {
				return sc.skip()
			}
			return eachKey(sc, func(k string) error {
				if k != "nodeSelectorTerms" || sc.isNull() {
					return sc.skip()
				}
				union, terms := osSet(0), 0
				err := eachElem(sc, func() error {
					terms++
					allowed, err := parseOSTerm(sc)
					union |= allowed
					return err
				})
				if terms > 0 {
					o.affinity = union
				}
				return err
			})
		})
	})
}

// parseOSTerm reads one node selector term and returns what its
// kubernetes.io/os expressions allow.
func parseOSTerm(sc *scanner) (osSet, error) {
	allowed := osAny
	err := eachKey(sc, func(k string) error {
		if k != "matchExpressions" || sc.isNull() {
			return sc.skip()
		}
		return eachElem(sc, func() error {
			var key, op string
			var vals osSet
			err := eachKey(sc, func(k string) error {
				var err error
				switch k {
				case "key":
					key, err = value(sc)
				case "operator":
					op, err = value(sc)
				case "values":
					if sc.isNull() {
						return nil
					}
					err = eachElem(sc, func() error {
						v, err := value(sc)
						vals |= osOf(v)
						return err
					})
				default:
					err = sc.skip()
				}
				return err
			})
			if key != names.OSLabel {
				return err
			}
			switch op {
			case "In":
				allowed &= vals
			case "NotIn":
				allowed &^= vals
			case "DoesNotExist":
				allowed = 0 // every kubelet sets the label
			}
			return err
		})
	})
	return allowed, err
}

// value reads a string or null, decoding it when it holds escapes (rare:
// the API server writes none in these values), so that comparisons see
// what a JSON decoder would.
func value(sc *scanner) (string, error) {
	if sc.isNull() {
		return "", nil
	}
	raw, esc, err := sc.str()
	if err != nil || !esc {
		return raw, err
	}
	return unquoteRaw(raw, true)
}

// planOS is the set of systems every template of a plan supports.
func planOS(tmpls []*templates.Template) osSet {
	all := osAny
	for _, t := range tmpls {
		var s osSet
		for _, o := range t.Supports() {
			s |= osOf(o)
		}
		all &= s
	}
	return all
}
