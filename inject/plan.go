package inject

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/graftdev/graft/templates"
)

// plan is everything graft wants a Pod to hold for one profile, template
// selection and parameter set: rendered once, then shared read-only by
// every request that maps to it.
type plan struct {
	id        uint32
	templates []string

	sidecars []element // spec.containers
	inits    []element // spec.initContainers (native sidecars)
	volumes  []element
	secrets  []element // imagePullSecrets
	appEnv   []element
	appMount []element

	annotations []element // name = key, raw = JSON string value
	labels      []element
	// status is graft.dev/status's value, raw JSON string.
	status element
	// audit is the auditAnnotations object, raw JSON.
	audit []byte
	// byRef indexes every element by its ref.
	byRef []*element
}

// element is one thing graft adds, as compact JSON.
type element struct {
	name      string
	mountPath string
	placement templates.Placement
	raw       []byte
	// ref indexes plan.refs: how a patch refers to this element.
	ref int
	// token says where a container's ServiceAccount token mount goes.
	token tokenSplice
}

// isOwn reports whether a container of that name is one graft injects.
func (pl *plan) isOwn(name string) bool {
	for i := range pl.sidecars {
		if pl.sidecars[i].name == name {
			return true
		}
	}
	for i := range pl.inits {
		if pl.inits[i].name == name {
			return true
		}
	}
	return false
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
// template name, the values that override defaults (profile, then annotation).
func buildPlan(id uint32, tmpls []*templates.Template, params map[string]map[string]string) (*plan, error) {
	names := templateNames(tmpls)
	pl := &plan{id: id, templates: names}
	seen := map[string]string{} // "kind/name" -> template
	claim := func(kind, name, tmpl string) error {
		if prev, dup := seen[kind+"/"+name]; dup {
			return &conflictError{first: prev, second: tmpl, kind: kind, name: name}
		}
		seen[kind+"/"+name] = tmpl
		return nil
	}
	for _, t := range tmpls {
		name := t.Name
		f, err := t.Render(params[name])
		if err != nil {
			return nil, err
		}
		groups := []struct {
			kind string
			in   []templates.Element
			out  *[]element
		}{
			{"container", f.Containers, &pl.sidecars},
			{"container", f.InitContainers, &pl.inits},
			{"volume", f.Volumes, &pl.volumes},
			{"imagePullSecret", f.ImagePullSecrets, &pl.secrets},
			{"env", f.AppEnv, &pl.appEnv},
			{"volumeMount", f.AppVolumeMounts, &pl.appMount},
		}
		for gi, g := range groups {
			for _, el := range g.in {
				if err := claim(g.kind, el.Name, name); err != nil {
					return nil, err
				}
				e := element{name: el.Name, mountPath: el.MountPath, raw: el.Raw}
				if gi == 1 {
					e.placement = t.Placement
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
			pl.annotations = append(pl.annotations, element{name: a.Key, raw: quoteJSON(a.Value)})
		}
		for _, l := range f.Labels {
			if err := claim("label", l.Key, name); err != nil {
				return nil, err
			}
			pl.labels = append(pl.labels, element{name: l.Key, raw: quoteJSON(l.Value)})
		}
	}
	status, err := json.Marshal(struct {
		Templates      []string `json:"templates"`
		Containers     []string `json:"containers,omitempty"`
		InitContainers []string `json:"initContainers,omitempty"`
		Volumes        []string `json:"volumes,omitempty"`
	}{names, elementNames(pl.sidecars), elementNames(pl.inits), elementNames(pl.volumes)})
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	pl.status = element{name: annotationStatus, raw: quoteJSON(string(status))}
	audit, err := json.Marshal(map[string]string{"injected-templates": strings.Join(names, ",")})
	if err != nil {
		return nil, fmt.Errorf("audit annotations: %w", err)
	}
	pl.audit = audit
	pl.byRef = pl.elements()
	for i, e := range pl.byRef {
		e.ref = i
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

func elementNames(els []element) []string {
	var out []string
	for _, e := range els {
		out = append(out, e.name)
	}
	return out
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
