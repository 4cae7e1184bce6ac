package inject

import "github.com/graftdev/graft/internal/names"

// Reserved names: annotations and labels in graft's domains (names.
// Reserved) are graft's, so that no Pod can claim what graft alone says
// of it: a redirect.graft.dev/ annotation the mesh CNI plugin obeys, a
// record, an injected label. A Pod may set only the documented per-Pod
// ones: the annotations graft.dev/templates and graft.dev/<template>.
// <param> (which graft validates), the label graft.dev/inject (graft
// reads only "false", which opts the Pod out before this; another value
// is a user's mistake graft inject warns about, harmless) and, where its
// profile lets a Pod choose its revision, graft.dev/rev. graft writes its own: the status
// and the injected label are always graft's value, and a key a template
// this request injects renders gets graft's value (merge.go). Any other
// key in graft's domains is refused, whatever onConflict says: keeping
// the Pod's value would let its author say what graft did not.

// reservedKey returns a conflict for the first annotation or label of p
// in graft's domains that the Pod may not set: none of the above, or a
// key of a template left out (skipped) with a value other than the one
// graft renders (one graft set on a call before stays).
func (s *scratch) reservedKey(pl *plan, p *pod, podRevision bool) (conflict, bool) {
	for _, a := range p.annotationKeys {
		switch {
		case !names.Reserved(a.key), a.key == names.Status, a.key == names.Templates,
			names.ParamAnnotationKey(a.key), s.renderedKey(pl.annotations, a):
			continue
		}
		return conflict{object: "annotation", name: a.key, tmpl: -1, kind: collideReserved}, true
	}
	for _, l := range p.labelKeys {
		switch {
		case !names.Reserved(l.key), l.key == names.Injected, l.key == names.Inject, l.key == names.Revision && podRevision,
			s.renderedKey(pl.labels[:pl.injectedAt], l):
			continue
		}
		return conflict{object: "label", name: l.key, tmpl: -1, kind: collideReserved}, true
	}
	return conflict{}, false
}

// renderedKey reports whether kv is a key of els that graft writes or
// keeps: one of a template this request injects (graft's value replaces
// the Pod's), or of one left out, holding graft's value.
func (s *scratch) renderedKey(els []element, kv kv) bool {
	for i := range els {
		if el := &els[i]; el.name == kv.key {
			return !s.skipped[el.tmpl] || sameContent(kv.value, rawContent(el.raw))
		}
	}
	return false
}

// appendReserved appends the denial of a reserved key.
func appendReserved(dst []byte, c *conflict) []byte {
	dst = append(dst, "the Pod sets "...)
	dst = append(dst, c.object...)
	dst = append(dst, ' ')
	dst = append(dst, c.name...)
	dst = append(dst, `, which is graft's to set (a Pod may set only the annotations `...)
	dst = append(dst, names.Templates...)
	dst = append(dst, " and "...)
	dst = append(dst, names.Prefix...)
	dst = append(dst, `<template>.<param>, and the labels `...)
	dst = append(dst, names.Inject...)
	dst = append(dst, ` and, where its profile allows, `...)
	dst = append(dst, names.Revision...)
	return append(dst, "); remove it"...)
}
