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
// template out), checked for the templates a request would inject: once
// graft.dev/status records a template, its objects are graft's.

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
// name graft injects (findConflict).
type collisionKind uint8

const (
	collideNone collisionKind = iota
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
// Pod's own containers, when the record does not hold ti yet. It checks
// budget b per port and container of the Pod and, once b is spent,
// reports none: the caller answers budget-exceeded.
func findCollision(pl *plan, ti int, p *pod, r *record, b *budget) (conflict, bool) {
	t := &pl.tmpls[ti]
	if r.find(t.name) >= 0 {
		return conflict{}, false
	}
	appName := func(pt *port) string {
		if pt.init {
			return p.initContainers[pt.container].name
		}
		return p.containers[pt.container].name
	}
	for i := range t.ports {
		gp := &t.ports[i]
		for j := range p.ports {
			if b.spent() {
				return conflict{}, false
			}
			pt := &p.ports[j]
			app := appName(pt)
			if r.owns(kContainers, app) {
				continue
			}
			if pt.number == gp.number && sameProtocol(pt.protocol, gp.protocol) {
				return conflict{kind: collidePort, tmpl: ti, app: app, graft: gp.container, number: gp.number, what: gp.protocol}, true
			}
			if gp.name != "" && pt.name == gp.name {
				return conflict{kind: collidePortName, tmpl: ti, app: app, graft: gp.container, what: gp.name}, true
			}
		}
	}
	for _, ru := range t.reserved {
		for ci := range p.containers {
			if b.spent() {
				return conflict{}, false
			}
			if c := &p.containers[ci]; !r.owns(kContainers, c.name) && runsAs(c.uid, p.uid, ru.uid) {
				return conflict{kind: collideUID, tmpl: ti, app: c.name, graft: ru.container, number: ru.uid, pod: !c.uid.set}, true
			}
		}
		for ci := range p.initContainers {
			if b.spent() {
				return conflict{}, false
			}
			if c := &p.initContainers[ci]; !r.owns(kContainers, c.name) && runsAs(c.uid, p.uid, ru.uid) {
				return conflict{kind: collideUID, tmpl: ti, app: c.name, graft: ru.container, number: ru.uid, pod: !c.uid.set}, true
			}
		}
	}
	for ci := range p.containers {
		if b.spent() {
			return conflict{}, false
		}
		c := &p.containers[ci]
		if r.owns(kContainers, c.name) {
			continue
		}
		env := p.envNames[c.envFrom:c.envTo]
		for i := range pl.appEnv {
			if el := &pl.appEnv[i]; el.tmpl == ti && !el.overridable && contains(env, el.name) {
				return conflict{kind: collideEnv, tmpl: ti, app: c.name, what: el.name}, true
			}
		}
		for _, m := range p.mounts[c.mountsFrom:c.mountsTo] {
			for i := range pl.appMount {
				if el := &pl.appMount[i]; el.tmpl == ti && m.path == el.mountPath && m.name != el.name {
					return conflict{kind: collideMount, tmpl: ti, app: c.name, what: m.path, name: m.name, graft: el.name}, true
				}
			}
		}
	}
	return conflict{}, false
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
