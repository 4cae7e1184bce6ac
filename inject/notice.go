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

// conflictMessage is the deny message for c under profile. Each message
// is written in one run of appends in a block of its own, its variable
// part computed first, so that the docs' quotes of it can be checked
// against the code (internal/refdocs reads such runs as messages).
func conflictMessage(dst []byte, c conflict, profile string) []byte {
	var buf [256]byte
	if c.kind == collideReserved {
		return appendReserved(dst, &c)
	}
	if c.kind == collideNone {
		why := appendWhyNot(buf[:0], &c)
		dst = append(dst, "Pod already has "...)
		dst = append(dst, c.object...)
		dst = append(dst, ` "`...)
		dst = append(dst, c.name...)
		dst = append(dst, `", which graft did not inject: `...)
		dst = append(dst, why...)
		dst = append(dst, `; rename it, or set onConflict: keep in profile "`...)
		dst = append(dst, profile...)
		dst = append(dst, `" to admit such Pods without `...)
		dst = append(dst, c.template...)
		return dst
	}
	collision := appendCollision(buf[:0], &c, c.template, false)
	dst = append(dst, collision...)
	dst = append(dst, `; change it, or set onConflict: keep in profile "`...)
	dst = append(dst, profile...)
	dst = append(dst, `" to admit such Pods without `...)
	dst = append(dst, c.template...)
	return dst
}

// appendWhyNot appends why an object named like graft's is not graft's.
func appendWhyNot(dst []byte, c *conflict) []byte {
	if c.why == notPlanned {
		dst = append(dst, "template "...)
		dst = append(dst, c.template...)
		dst = append(dst, " renders that name, and graft does not inject it into this Pod"...)
		return dst
	}
	if c.why == misplaced && c.field == "" { // the plan renders it in spec.containers
		dst = append(dst, "template "...)
		dst = append(dst, c.template...)
		dst = append(dst, " renders it as a container"...)
		return dst
	}
	if c.why == misplaced {
		dst = append(dst, "template "...)
		dst = append(dst, c.template...)
		dst = append(dst, " renders it as an init container"...)
		dst = append(dst, c.field...)
		return dst
	}
	if c.field == "" {
		dst = append(dst, "it differs from template "...)
		dst = append(dst, c.template...)
		dst = append(dst, "'s"...)
		return dst
	}
	dst = append(dst, "its "...)
	dst = append(dst, c.field...)
	dst = append(dst, " differs from template "...)
	dst = append(dst, c.template...)
	dst = append(dst, "'s"...)
	return dst
}
