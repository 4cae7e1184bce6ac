package inject

import (
	"encoding/json"
	"strconv"

	"github.com/graftdev/graft/templates"
)

// Collisions: what a template adds that the Pod's own containers already
// use, though under other names than graft's. A port number or port name
// two containers declare is accepted by the API server with a warning,
// but only one can bind it; an app container running as the uid a proxy's
// traffic redirection exempts bypasses the proxy; an env var graft sets
// in app containers that one already sets keeps the app's value; a mount
// path one already uses keeps the app's volume there. Each is a conflict
// under the profile's onConflict (deny by default; keep leaves the
// template out), checked for the templates a request would inject,
// against every container that is not graft's (own.go), whatever
// graft.dev/status says.

// uid is a runAsUser as the Pod sets it.
type uid struct {
	set bool
	v   int64
}

// port is a containerPort of one of the Pod's containers or init
// containers.
type port struct {
	container int // index into pod.containers or pod.initContainers
	init      bool
	number    int64
	protocol  string // raw JSON content; "" is TCP
	name      string
}

// planPort is a port one of a template's containers opens.
type planPort struct {
	container      string
	number         int64
	protocol, name string
}

// reservedUID is a uid a template reserves for one of its containers.
type reservedUID struct {
	container string
	uid       int64
}

// collisionKind says which collision a conflict is; collideNone is a
// name graft injects (own.go), collideReserved a key in graft's domains
// (reserved.go).
type collisionKind uint8

const (
	collideNone collisionKind = iota
	collideReserved
	collidePort
	collidePortName
	collideUID
	collideEnv
	collideMount
)

// parsePorts appends the ports of the container (or init container) at
// index ci, read from the array at sc.
func parsePorts(sc *scanner, p *pod, ci int, init bool) error {
	if sc.isNull() {
		return nil
	}
	return eachElem(sc, func() error {
		pt := port{container: ci, init: init}
		err := eachKey(sc, func(k string) error {
			var err error
			switch k {
			case "containerPort":
				pt.number, err = sc.integer()
			case "protocol":
				pt.protocol, err = value(sc)
			case "name":
				pt.name, err = value(sc)
			default:
				err = sc.skip()
			}
			return err
		})
		p.ports = append(p.ports, pt)
		return err
	})
}

// parseRunAsUser reads runAsUser from the securityContext at sc.
func parseRunAsUser(sc *scanner) (uid, error) {
	var u uid
	err := eachKey(sc, func(k string) error {
		if k != "runAsUser" || sc.isNull() {
			return sc.skip()
		}
		var err error
		u.v, err = sc.integer()
		u.set = err == nil
		return err
	})
	return u, err
}

// integer reads a JSON number that is an integer; any other value (a
// number with a fraction, a string, null), which no field graft reads
// holds in an object the API server sent, is skipped and read as 0.
func (sc *scanner) integer() (int64, error) {
	if c := sc.peek(); c != '-' && (c < '0' || c > '9') {
		return 0, sc.skip() // not a number: nothing the API server sends
	}
	start := sc.i
	if err := sc.skip(); err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(sc.s[start:sc.i], 10, 64)
	if err != nil {
		return 0, nil
	}
	return n, nil
}

// planCollisions records, per template of pl, what its containers open
// and reserve, and which of its app env vars app containers may set.
func planCollisions(pl *plan, tmpls []*templates.Template) error {
	for _, l := range [...][]element{pl.inits, pl.sidecars} {
		for i := range l {
			el := &l[i]
			var c struct {
				Ports []struct {
					Name          string `json:"name"`
					ContainerPort int64  `json:"containerPort"`
					Protocol      string `json:"protocol"`
				} `json:"ports"`
				SecurityContext *struct {
					RunAsUser *int64 `json:"runAsUser"`
				} `json:"securityContext"`
			}
			if err := json.Unmarshal(el.raw, &c); err != nil {
				return err
			}
			t := &pl.tmpls[el.tmpl]
			for _, pt := range c.Ports {
				t.ports = append(t.ports, planPort{container: el.name, number: pt.ContainerPort, protocol: pt.Protocol, name: pt.Name})
			}
			if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
				for _, u := range tmpls[el.tmpl].ReservedUIDs {
					if u == *c.SecurityContext.RunAsUser {
						t.reserved = append(t.reserved, reservedUID{container: el.name, uid: u})
					}
				}
			}
		}
	}
	for i := range pl.appEnv {
		el := &pl.appEnv[i]
		el.overridable = tmpls[el.tmpl].EnvOverridable(el.name)
	}
	return nil
}

// sameProtocol reports whether two raw protocols are one (empty is TCP).
func sameProtocol(a, b string) bool {
	if a == "" {
		a = "TCP"
	}
	if b == "" {
		b = "TCP"
	}
	return a == b
}

// findCollision returns the first collision of template ti with the
// Pod's containers that are not graft's (s.initOwn, s.ctrOwn: judge ran),
// whatever the Pod's record says: graft's record is never evidence. An
// env var that is graft's render of the template's is graft's, no
// collision. It checks budget b per port and container of the Pod and,
// once b is spent, reports none: the caller answers budget-exceeded.
func findCollision(pl *plan, ti int, p *pod, s *scratch, b *budget) (conflict, bool) {
	t := &pl.tmpls[ti]
	graftPort := func(pt *port) bool {
		if pt.init {
			return s.initOwn[pt.container] >= 0
		}
		return s.ctrOwn[pt.container] >= 0
	}
	appName := func(pt *port) string {
		if pt.init {
			return p.initContainers[pt.container].name
		}
		return p.containers[pt.container].name
	}
	c := conflict{tmpl: ti, template: t.name}
	for i := range t.ports {
		gp := &t.ports[i]
		for j := range p.ports {
			if b.spent() {
				return conflict{}, false
			}
			pt := &p.ports[j]
			if graftPort(pt) {
				continue
			}
			if pt.number == gp.number && sameProtocol(pt.protocol, gp.protocol) {
				c.kind, c.app, c.graft, c.number, c.what = collidePort, appName(pt), gp.container, gp.number, gp.protocol
				return c, true
			}
			if gp.name != "" && pt.name == gp.name {
				c.kind, c.app, c.graft, c.what = collidePortName, appName(pt), gp.container, gp.name
				return c, true
			}
		}
	}
	for _, ru := range t.reserved {
		for ci := range p.containers {
			if b.spent() {
				return conflict{}, false
			}
			if a := &p.containers[ci]; s.ctrOwn[ci] < 0 && runsAs(a.uid, p.uid, ru.uid) {
				c.kind, c.app, c.graft, c.number, c.pod = collideUID, a.name, ru.container, ru.uid, !a.uid.set
				return c, true
			}
		}
		for ci := range p.initContainers {
			if b.spent() {
				return conflict{}, false
			}
			if a := &p.initContainers[ci]; s.initOwn[ci] < 0 && runsAs(a.uid, p.uid, ru.uid) {
				c.kind, c.app, c.graft, c.number, c.pod = collideUID, a.name, ru.container, ru.uid, !a.uid.set
				return c, true
			}
		}
	}
	for ci := range p.containers {
		if b.spent() {
			return conflict{}, false
		}
		a := &p.containers[ci]
		if s.ctrOwn[ci] >= 0 {
			continue
		}
		env := p.envNames[a.envFrom:a.envTo]
		for i := range pl.appEnv {
			el := &pl.appEnv[i]
			if el.tmpl != ti || el.overridable {
				continue
			}
			if j := index(env, el.name); j >= 0 && !appEnvIsGraft(el, p.envRaw[a.envFrom+j], p, b) {
				c.kind, c.app, c.what = collideEnv, a.name, el.name
				return c, true
			}
		}
		for _, m := range p.mounts[a.mountsFrom:a.mountsTo] {
			for i := range pl.appMount {
				if el := &pl.appMount[i]; el.tmpl == ti && m.path == el.mountPath && m.name != el.name {
					c.kind, c.app, c.what, c.name, c.graft = collideMount, a.name, m.path, m.name, el.name
					return c, true
				}
			}
		}
	}
	return conflict{}, false
}

// index returns the index of name in list, or -1.
func index(list []string, name string) int {
	for i, n := range list {
		if n == name {
			return i
		}
	}
	return -1
}

// runsAs reports whether a container with own runs as u, its own uid
// else the Pod's.
func runsAs(own, podUID uid, u int64) bool {
	if own.set {
		return own.v == u
	}
	return podUID.set && podUID.v == u
}

// appendCollision appends the description of collision c, both sides
// named: `container "app" already uses port 15021/TCP, which template
// mesh-proxy's container "graft-proxy" opens`; short leaves out graft's
// side, for a warning that must stay under kubectl's 120 characters.
func appendCollision(dst []byte, c *conflict, tmpl string, short bool) []byte {
	dst = append(dst, `container "`...)
	dst = append(dst, c.app...)
	dst = append(dst, '"')
	switch c.kind {
	case collidePort:
		dst = append(dst, " already uses port "...)
		dst = strconv.AppendInt(dst, c.number, 10)
		dst = append(dst, '/')
		if c.what == "" {
			dst = append(dst, "TCP"...)
		} else {
			dst = append(dst, c.what...)
		}
		if !short {
			dst = appendTemplateObject(dst, ", which template ", tmpl, c.graft)
			dst = append(dst, " opens"...)
		}
	case collidePortName:
		dst = append(dst, ` already names a port "`...)
		dst = append(dst, c.what...)
		dst = append(dst, '"')
		if !short {
			dst = appendTemplateObject(dst, `, as template `, tmpl, c.graft)
			dst = append(dst, " does"...)
		}
	case collideUID:
		dst = append(dst, " runs as uid "...)
		dst = strconv.AppendInt(dst, c.number, 10)
		if c.pod && !short {
			dst = append(dst, " (the Pod's securityContext.runAsUser)"...)
		}
		if !short {
			dst = append(dst, ", which template "...)
			dst = append(dst, tmpl...)
			dst = append(dst, ` reserves for its container "`...)
			dst = append(dst, c.graft...)
			dst = append(dst, '"')
		}
	case collideEnv:
		dst = append(dst, ` already sets env var "`...)
		dst = append(dst, c.what...)
		dst = append(dst, '"')
		if !short {
			dst = append(dst, ", which template "...)
			dst = append(dst, tmpl...)
			dst = append(dst, " sets in every app container"...)
		}
	case collideMount:
		dst = append(dst, ` already mounts volume "`...)
		dst = append(dst, c.name...)
		dst = append(dst, `" at `...)
		dst = append(dst, c.what...)
		if !short {
			dst = append(dst, ", where template "...)
			dst = append(dst, tmpl...)
			dst = append(dst, ` mounts volume "`...)
			dst = append(dst, c.graft...)
			dst = append(dst, '"')
		}
	}
	return dst
}

// appendTemplateObject appends `<lead><tmpl>'s container "<name>"`.
func appendTemplateObject(dst []byte, lead, tmpl, name string) []byte {
	dst = append(dst, lead...)
	dst = append(dst, tmpl...)
	dst = append(dst, `'s container "`...)
	dst = append(dst, name...)
	return append(dst, '"')
}
