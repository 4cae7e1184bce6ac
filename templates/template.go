package templates

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"

	"github.com/graftdev/graft/internal/names"
)

// Template is one parsed, validated sidecar template.
type Template struct {
	// Name is a DNS-1123 label, equal to the file name without .yaml. It
	// names the template in profiles, in graft.dev/templates and in the
	// parameter annotations graft.dev/<name>.<param>; a template of the
	// same name as a built-in one replaces it.
	Name string `json:"name"`
	// Description says in a sentence what the template injects; required.
	Description string `json:"description"`
	// Placement says where the fragment's initContainers go; default first.
	Placement Placement `json:"placement,omitempty"`
	// PodSecurity is the Pod Security level (restricted, baseline or
	// privileged) the fragment needs with every parameter at a value its
	// podSecurity does not name; default restricted. `graft templates
	// lint` checks it with the API server's own Pod Security checks, and
	// the engine injects the template only where the profile and the
	// namespace allow it.
	PodSecurity Level `json:"podSecurity,omitempty"`
	// OS lists the operating systems (linux, windows) the fragment's
	// containers run on; default [linux]. graft skips a Pod for another
	// one (spec.os.name, or a kubernetes.io/os node selector or required
	// node affinity) with reason os, rather than make it invalid.
	OS []string `json:"os,omitempty"`
	// ReservedUIDs are uids the template's containers run as that no app
	// container may (a proxy whose traffic the redirection exempts by uid):
	// a Pod whose container, or Pod securityContext, runs as one is a
	// conflict, answered per the profile's onConflict. Each must be the
	// runAsUser of one of the template's containers.
	ReservedUIDs []int64 `json:"reservedUIDs,omitempty"`
	// OverridableEnv names the appContainers env vars an app container may
	// set itself, graft then leaving its value (a name, or a prefix ending
	// in *): OTEL_* for an SDK's settings. An app container that sets any
	// other of them is a conflict, answered per the profile's onConflict.
	OverridableEnv []string `json:"overridableEnv,omitempty"`
	// Params are the parameters the fragment reads as .<name>, each settable
	// per Pod with the annotation graft.dev/<template>.<name>. Names are
	// unique within the template.
	Params []Param `json:"parameters,omitempty"`
	// Fragment is the text/template source of the Pod fragment (YAML). It
	// must render, with the parameters' defaults, into a valid fragment.
	// A parameter value cannot change the fragment's structure: it lands,
	// as text, in the key or scalar where the fragment writes it, however
	// it is written (quote makes a whole scalar of it; as is, it is text
	// within its scalar). A mapping may hold a key once.
	Fragment string `json:"fragment"`

	// File is where the template came from, for messages.
	File string `json:"-"`
	// Source is the file's bytes as read: the engine's content digest
	// (graft.dev/status) covers them.
	Source []byte `json:"-"`
	tmpl   *template.Template
}

// Operating systems a template may declare.
const (
	OSLinux   = "linux"
	OSWindows = "windows"
)

// Supports lists the operating systems t's containers run on.
func (t *Template) Supports() []string {
	if len(t.OS) == 0 {
		return []string{OSLinux}
	}
	return t.OS
}

func (t *Template) checkOS() error {
	for i, o := range t.OS {
		if o != OSLinux && o != OSWindows {
			return fmt.Errorf("template %s: os %q: want linux or windows", t.Name, o)
		}
		if slices.Contains(t.OS[:i], o) {
			return fmt.Errorf("template %s: os %q listed twice", t.Name, o)
		}
	}
	return nil
}

// EnvOverridable reports whether an app container may set the env var
// name itself (OverridableEnv).
func (t *Template) EnvOverridable(name string) bool {
	for _, o := range t.OverridableEnv {
		if p, ok := strings.CutSuffix(o, "*"); ok && strings.HasPrefix(name, p) || o == name {
			return true
		}
	}
	return false
}

// Param looks up a declared parameter.
func (t *Template) Param(name string) (*Param, bool) {
	for i := range t.Params {
		if t.Params[i].Name == name {
			return &t.Params[i], true
		}
	}
	return nil, false
}

// AnnotationKey is the Pod annotation that overrides param on this template.
func (t *Template) AnnotationKey(param string) string {
	return names.ParamAnnotation(t.Name, param)
}

func (t *Template) init() error {
	if !isDNSLabel(t.Name) {
		return fmt.Errorf("name %q: must be a DNS-1123 label", t.Name)
	}
	if strings.TrimSpace(t.Description) == "" {
		return fmt.Errorf("template %s: description is required", t.Name)
	}
	switch t.Placement {
	case "":
		t.Placement = PlaceFirst
	case PlaceFirst, PlaceBeforeInit, PlaceLast:
	default:
		return fmt.Errorf("template %s: placement %q: want first, before-init or last", t.Name, t.Placement)
	}
	seen := map[string]bool{}
	for i := range t.Params {
		p := &t.Params[i]
		if seen[p.Name] {
			return fmt.Errorf("template %s: parameter %q declared twice", t.Name, p.Name)
		}
		seen[p.Name] = true
		if err := p.init(); err != nil {
			return fmt.Errorf("template %s: %w", t.Name, err)
		}
	}
	if err := t.checkLevels(); err != nil {
		return err
	}
	if err := t.checkOS(); err != nil {
		return err
	}
	if strings.Contains(t.Fragment, tokenPrefix) {
		return fmt.Errorf("template %s: fragment: contains %s, which graft writes in place of parameter values while it renders", t.Name, tokenPrefix)
	}
	tmpl, err := template.New(t.Name).Option("missingkey=error").Funcs(textFuncs).Funcs(funcs).Parse(t.Fragment)
	if err != nil {
		return fmt.Errorf("template %s: fragment: %w", t.Name, err)
	}
	t.tmpl = tmpl
	return nil
}

// Values resolves parameter values: overrides (already validated) win over
// defaults. Unknown override names are an error.
func (t *Template) Values(overrides map[string]string) (map[string]any, error) {
	out := make(map[string]any, len(t.Params))
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		if _, ok := t.Param(name); !ok {
			return nil, fmt.Errorf("template %s has no parameter %q", t.Name, name)
		}
	}
	for i := range t.Params {
		p := &t.Params[i]
		raw, ok := overrides[p.Name]
		if !ok {
			raw = p.Default
		}
		v, err := p.Parse(raw)
		if err != nil {
			return nil, &ParamError{Template: t.Name, Param: p.Name, Value: raw, Rule: err.Error()}
		}
		out[p.Name] = v
	}
	return out, nil
}

// Render executes the template with overrides applied to the defaults and
// returns the fragment. It validates every value (a *ParamError) and the
// rendered fragment against the rules a Pod holding it must meet (a
// *RenderError, see checkFragment): every caller, the engine included,
// gets only fragments that pass lint's Kubernetes checks.
func (t *Template) Render(overrides map[string]string) (*Fragment, error) {
	vals, err := t.Values(overrides)
	if err != nil {
		return nil, err
	}
	// Values render as tokens, which the YAML parser cannot read as
	// syntax, and are put in place after parsing (opaque.go): no value
	// changes the document's structure.
	text, err := t.execute(vals)
	if err != nil {
		return nil, err
	}
	f, err := parseFragment(text)
	if err != nil {
		return nil, &RenderError{Template: t.Name, Problems: []string{"rendered fragment: " + err.Error()}, err: err}
	}
	if problems := checkFragment(f); len(problems) > 0 {
		return nil, &RenderError{Template: t.Name, Problems: problems}
	}
	return f, nil
}

// RenderYAML executes the template and returns the text it writes, each
// value written where the template puts it, as text/template alone would
// write it. It does not check the text, which, unlike what Render
// parses, a value may have given another structure.
func (t *Template) RenderYAML(overrides map[string]string) ([]byte, error) {
	vals, err := t.Values(overrides)
	if err != nil {
		return nil, err
	}
	out, err := t.execute(vals)
	if err != nil {
		return nil, err
	}
	s, _ := realize(string(out))
	return []byte(s), nil
}

// execute runs the fragment with resolved values, each string written as
// a token (opaque.go).
func (t *Template) execute(vals map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	if err := t.tmpl.Execute(&buf, opaqueValues(vals)); err != nil {
		msg, _ := realize(err.Error())
		return nil, &RenderError{Template: t.Name, Problems: []string{"render: " + msg}, err: err}
	}
	return buf.Bytes(), nil
}

// RenderError is a render a Pod could not hold: the template failed to
// execute, its output is not a fragment, or the fragment breaks a rule the
// API server checks. It depends on the parameter values rendered with.
type RenderError struct {
	Template string
	// Problems each name the element and the rule broken, as lint prints
	// them: "initContainers[x]: name: ...".
	Problems []string
	err      error
}

func (e *RenderError) Error() string {
	return "template " + e.Template + ": " + strings.Join(e.Problems, "; ")
}

// Unwrap returns the execution or parse error, if that is what failed.
func (e *RenderError) Unwrap() error { return e.err }
