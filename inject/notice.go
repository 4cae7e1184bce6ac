package inject

// noticeKind says what a warning reports.
type noticeKind uint8

const (
	// noticeConflict: a template left out under onConflict: keep.
	noticeConflict noticeKind = iota
	// noticeRestart: restartPolicy: Always restored on graft's sidecar.
	noticeRestart
	// noticeMoved: graft's sidecar moved back to its placement.
	noticeMoved
	// noticeText: a message written in full (the rare paths' own).
	noticeText
)

// notice is a warning to return. Its strings alias the request or the
// plan; they are escaped when written.
type notice struct {
	kind     noticeKind
	object   string // conflict: "container", "init container" or "volume"
	name     string
	template string // conflict: the template left out; moved: the placement
	// conflict is the conflict, when it is a collision.
	conflict conflict
}

// writeNotice appends n as a warning.
func (w *responseWriter) writeNotice(n *notice) {
	switch n.kind {
	case noticeConflict:
		var buf [256]byte
		w.warn("graft: template ", n.template, " not injected: ", b2s(n.appendKeptWhy(buf[:0])))
	case noticeRestart:
		w.warn(`graft: restored restartPolicy: Always on its sidecar "`, n.name, `", which a later admission step removed`)
	case noticeMoved:
		w.warn(`graft: moved its sidecar "`, n.name, `" back to placement `, n.template, ", which a later admission step changed")
	default:
		w.warn(n.name)
	}
}

// appendKeptWhy appends why a noticeConflict's template was left out:
// the words after "not injected: " in its warning, and Kept.Why.
func (n *notice) appendKeptWhy(dst []byte) []byte {
	if n.conflict.kind != collideNone {
		return appendCollision(dst, &n.conflict, n.template, true)
	}
	dst = append(dst, "the Pod already has "...)
	dst = append(dst, n.object...)
	dst = append(dst, ` "`...)
	dst = append(dst, n.name...)
	return append(dst, `", which graft did not inject`...)
}

// conflictMessage is the deny message for c under profile.
func conflictMessage(dst []byte, c conflict, profile string) []byte {
	tmpl := c.template
	switch c.kind {
	case collideReserved:
		return appendReserved(dst, &c)
	case collideNone:
		dst = append(dst, "Pod already has "...)
		dst = append(dst, c.object...)
		dst = append(dst, ` "`...)
		dst = append(dst, c.name...)
		dst = append(dst, `", which graft did not inject: `...)
		dst = appendWhyNot(dst, &c)
		dst = append(dst, "; rename it"...)
	default:
		dst = appendCollision(dst, &c, tmpl, false)
		dst = append(dst, "; change it"...)
	}
	dst = append(dst, `, or set onConflict: keep in profile "`...)
	dst = append(dst, profile...)
	if c.tmpl < 0 {
		return append(dst, `" to admit such Pods`...)
	}
	dst = append(dst, `" to admit such Pods without `...)
	return append(dst, tmpl...)
}

// appendWhyNot appends why an object named like graft's is not graft's.
func appendWhyNot(dst []byte, c *conflict) []byte {
	switch c.why {
	case notPlanned:
		dst = append(dst, "template "...)
		dst = append(dst, c.template...)
		return append(dst, " renders that name, and graft does not inject it into this Pod"...)
	case misplaced:
		dst = append(dst, "template "...)
		dst = append(dst, c.template...)
		dst = append(dst, " renders it as "...)
		return append(dst, c.field...)
	}
	if c.field == "" {
		dst = append(dst, "it differs from template "...)
	} else {
		dst = append(dst, "its "...)
		dst = append(dst, c.field...)
		dst = append(dst, " differs from template "...)
	}
	dst = append(dst, c.template...)
	return append(dst, "'s"...)
}
