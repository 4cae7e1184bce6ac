package inject

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// plan is everything graft wants a Pod to hold for one profile, template
// selection and parameter set: rendered once, then shared read-only by
// every request that maps to it.
type plan struct {
	id        uint32
	templates []string
	// tmpls are the templates with what graft.dev/status records of them.
	tmpls []planTemplate

	sidecars []element // spec.containers
	inits    []element // spec.initContainers (native sidecars)
	volumes  []element
	secrets  []element // imagePullSecrets
	appEnv   []element
	appMount []element

	annotations []element // name = key, raw = JSON string value
	// labels are the templates' labels, then from injectedAt one
	// graft.dev/injected label per template (plan.tmpls order): the label
	// graft sets on every Pod it injects, recorded under the first
	// template the request injects (see scratch.markInjected).
	labels     []element
	injectedAt int
	// revision is the resolved revision graft.dev/injected carries.
	revision string
	// status stands for graft.dev/status, whose value each request writes
	// (scratch.statusOut): it records what that request's Pod holds.
	status element
	// audit is the auditAnnotations object, raw JSON.
	audit []byte
	// level is the Pod Security level the plan needs, and nsDeny, by the
	// rank of a namespace's level, the message refusing a Pod in a
	// namespace that enforces less ("" where it suffices).
	level  levelNeed
	nsDeny [2]string
	// os is the operating systems every template supports.
	os osSet
	// byRef indexes every element by its ref.
	byRef []*element
}

// planTemplate is one template of a plan as graft.dev/status records it.
type planTemplate struct {
	name, revision string
	// digest is the first 16 hex digits of sha256 over the template's
	// source, a NUL, and the resolved parameters as sorted name=value
	// lines: it changes whenever what the template renders could.
	digest    string
	placement templates.Placement
	// form is how name and revision reach the status (recordwrite.go).
	form nameForm
	// ports and reserved are what its containers open and reserve, which
	// the Pod's own containers may not (collide.go).
	ports    []planPort
	reserved []reservedUID
}

// element is one thing graft adds, as compact JSON.
type element struct {
	name      string
	mountPath string
	placement templates.Placement
	raw       []byte
	// ref indexes plan.byRef: how a patch refers to this element.
	ref int
	// tmpl indexes plan.tmpls: the template that adds the element (-1
	// for the status).
	tmpl int
	// sidecar: an init container rendered with restartPolicy: Always.
	sidecar bool
	// form is how name reaches the status (recordwrite.go).
	form nameForm
	// token says where a container's ServiceAccount token mount goes.
	token tokenSplice
	// overridable: an app env var app containers may set themselves.
	overridable bool
	// kind is the status list that records the element.
	kind listKind
	// render is a container's, volume's or app env var's render as the
	// API server stores it: what the Pod's object of its name must be
	// to be graft's (own.go).
	render *rnode
}

// templateIndex returns the index in pl.tmpls of the template called
// name, or -1.
func (pl *plan) templateIndex(name string) int {
	for i := range pl.tmpls {
		if pl.tmpls[i].name == name {
			return i
		}
	}
	return -1
}

// kind returns the elements a status list of kind k records.
func (pl *plan) kind(k listKind) []element {
	switch k {
	case kInits:
		return pl.inits
	case kContainers:
		return pl.sidecars
	case kVolumes:
		return pl.volumes
	case kSecrets:
		return pl.secrets
	case kAnnotations:
		return pl.annotations
	case kLabels:
		return pl.labels
	}
	return nil
}

// initNamed returns the plan's init container of that name, or nil.
func (pl *plan) initNamed(name string) *element {
	for i := range pl.inits {
		if pl.inits[i].name == name {
			return &pl.inits[i]
		}
	}
	return nil
}

// elements lists every element; its index is the element's ref.
func (pl *plan) elements() []*element {
	var out []*element
	for _, l := range [][]element{pl.sidecars, pl.inits, pl.volumes, pl.secrets, pl.appEnv, pl.appMount, pl.annotations, pl.labels} {
		for i := range l {
			out = append(out, &l[i])
		}
	}
	return append(out, &pl.status)
}

// buildPlan renders the templates with their parameters. params holds, per
// template name, the values that override defaults (profile, then
// annotation); revision is what the status records as the templates'
// revision.
func buildPlan(id uint32, revision string, tmpls []*templates.Template, params map[string]map[string]string) (*plan, error) {
	tmplNames := templateNames(tmpls)
	pl := &plan{id: id, templates: tmplNames, revision: revision}
	seen := map[string]string{} // "kind/name" -> template
	claim := func(kind, name, tmpl string) error {
		if prev, dup := seen[kind+"/"+name]; dup {
			return &conflictError{first: prev, second: tmpl, kind: kind, name: name}
		}
		seen[kind+"/"+name] = tmpl
		return nil
	}
	for ti, t := range tmpls {
		name := t.Name
		f, err := t.Render(params[name])
		if err != nil {
			return nil, err
		}
		pl.tmpls = append(pl.tmpls, planTemplate{name: name, revision: revision,
			digest: templateDigest(t, params[name]), placement: t.Placement, form: formOf(name + revision)})
		groups := []struct {
			kind string
			list listKind
			in   []templates.Element
			out  *[]element
		}{
			{"container", kContainers, f.Containers, &pl.sidecars},
			{"container", kInits, f.InitContainers, &pl.inits},
			{"volume", kVolumes, f.Volumes, &pl.volumes},
			{"imagePullSecret", kSecrets, f.ImagePullSecrets, &pl.secrets},
			{"env", numKinds, f.AppEnv, &pl.appEnv},
			{"volumeMount", numKinds, f.AppVolumeMounts, &pl.appMount},
		}
		for gi, g := range groups {
			for _, el := range g.in {
				if err := claim(g.kind, el.Name, name); err != nil {
					return nil, err
				}
				e := element{name: el.Name, mountPath: el.MountPath, raw: el.Raw, tmpl: ti, kind: g.list}
				if e.render, err = renderOf(g.kind, el.Raw); err != nil {
					return nil, fmt.Errorf("template %s: %s %s: %w", name, g.kind, el.Name, err)
				}
				if gi == 1 {
					e.placement = t.Placement
					e.sidecar = restartsAlways(el.Raw)
				}
				if gi <= 1 {
					if e.token, err = newTokenSplice(el.Raw); err != nil {
						return nil, fmt.Errorf("template %s: container %s: %w", name, el.Name, err)
					}
				}
				*g.out = append(*g.out, e)
			}
		}
		for _, a := range f.Annotations {
			if err := claim("annotation", a.Key, name); err != nil {
				return nil, err
			}
			pl.annotations = append(pl.annotations, element{name: a.Key, raw: quoteJSON(a.Value), tmpl: ti, kind: kAnnotations})
		}
		for _, l := range f.Labels {
			if err := claim("label", l.Key, name); err != nil {
				return nil, err
			}
			pl.labels = append(pl.labels, element{name: l.Key, raw: quoteJSON(l.Value), tmpl: ti, kind: kLabels})
		}
	}
	pl.injectedAt = len(pl.labels)
	for ti := range tmpls {
		pl.labels = append(pl.labels, element{name: names.Injected, raw: quoteJSON(revision), tmpl: ti, kind: kLabels})
	}
	pl.status = element{name: names.Status, tmpl: -1}
	audit, err := json.Marshal(map[string]string{"injected-templates": strings.Join(tmplNames, ",")})
	if err != nil {
		return nil, fmt.Errorf("audit annotations: %w", err)
	}
	pl.audit = audit
	pl.level = planLevel(tmpls, params)
	pl.os = planOS(tmpls)
	if err := planCollisions(pl, tmpls); err != nil {
		return nil, fmt.Errorf("internal: %w", err)
	}
	namespaceDenials(pl)
	pl.byRef = pl.elements()
	for i, e := range pl.byRef {
		e.ref, e.form = i, formOf(e.name)
	}
	return pl, nil
}

// conflictError is two templates injecting the same name into one Pod.
// Like a *templates.RenderError, it depends on the templates chosen and
// the values they were rendered with.
type conflictError struct{ first, second, kind, name string }

func (e *conflictError) Error() string {
	return fmt.Sprintf("templates %s and %s both inject %s %q", e.first, e.second, e.kind, e.name)
}

// TemplateDigest is the digest graft.dev/status records for t rendered
// with overrides (parameter name to value) over its defaults: `graft
// export` compiles it into its policies.
func TemplateDigest(t *templates.Template, overrides map[string]string) string {
	return templateDigest(t, overrides)
}

// templateDigest is planTemplate.digest for t rendered with overrides
// (parameter name to value) over its defaults.
func templateDigest(t *templates.Template, overrides map[string]string) string {
	h := sha256.New()
	h.Write(t.Source)
	h.Write([]byte{0})
	lines := make([]string, 0, len(t.Params))
	for _, p := range t.Params {
		v, ok := overrides[p.Name]
		if !ok {
			v = p.Default
		}
		lines = append(lines, p.Name+"="+v+"\n")
	}
	slices.Sort(lines)
	for _, l := range lines {
		h.Write([]byte(l))
	}
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:8])
}

// restartsAlways reports whether a rendered container sets restartPolicy:
// Always (a native sidecar).
func restartsAlways(raw []byte) bool {
	var c struct {
		RestartPolicy string `json:"restartPolicy"`
	}
	return json.Unmarshal(raw, &c) == nil && c.RestartPolicy == "Always"
}

func quoteJSON(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// unquoteRaw decodes raw JSON string content (as the scanner returns it).
func unquoteRaw(raw string, escaped bool) (string, error) {
	if !escaped {
		return raw, nil
	}
	s, err := strconv.Unquote(`"` + raw + `"`)
	if err != nil {
		var out string
		if jerr := json.Unmarshal([]byte(`"`+raw+`"`), &out); jerr != nil {
			return "", fmt.Errorf("%w: bad string escape", ErrMalformed)
		}
		return out, nil
	}
	return s, nil
}
