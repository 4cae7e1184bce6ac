package inject

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/graftdev/graft/templates"
)

// A profile's guards on what a Pod's annotations may ask for: locked
// parameters and allowed images. Both are checked where plans are built
// (entry.go), never on the request path of a Pod without graft
// annotations, whose plan the profile's own values decide.

// checkGuards validates lockedParams and allowedImages without templates:
// each lock names <template>.<param> of a template the profile may
// inject, or *.<param>.
func (p *Profile) checkGuards() error {
	for _, l := range p.LockedParams {
		tmpl, param, ok := strings.Cut(l, ".")
		if !ok || tmpl == "" || param == "" || strings.Contains(param, ".") {
			return fmt.Errorf("lockedParams: %q: want <template>.<param>", l)
		}
		if tmpl != anyTemplate && !slices.Contains(p.Templates, tmpl) && !slices.Contains(p.AllowedTemplates, tmpl) {
			return fmt.Errorf("lockedParams: %q: the profile never injects template %s", l, tmpl)
		}
	}
	if dup := firstDuplicate(p.LockedParams); dup != "" {
		return fmt.Errorf("lockedParams: %q listed twice", dup)
	}
	for _, a := range p.AllowedImages {
		if strings.TrimSpace(a) != a || a == "" {
			return fmt.Errorf("allowedImages: %q: want an image prefix without spaces", a)
		}
	}
	if dup := firstDuplicate(p.AllowedImages); dup != "" {
		return fmt.Errorf("allowedImages: %q listed twice", dup)
	}
	return nil
}

// anyTemplate in a lock, *.<param>, locks the parameter of that name of
// every template the profile may inject that declares one: the built-in
// profiles lock *.image, which holds whatever templates a directory
// overlays on the built-in ones.
const anyTemplate = "*"

// checkLocks verifies every lock of a named template names one of its
// parameters; ts are the templates the profile may inject.
func (p *Profile) checkLocks(ts []*templates.Template) error {
	for _, l := range p.LockedParams {
		tmpl, param, _ := strings.Cut(l, ".")
		t := findTemplate(ts, tmpl)
		if tmpl == anyTemplate || t == nil {
			continue // checkGuards: the profile names it, so New resolves it
		}
		if _, ok := t.Param(param); !ok {
			return fmt.Errorf("lockedParams: %q: template %s has no parameter %q", l, tmpl, param)
		}
	}
	return nil
}

// locked reports whether the profile locks parameter param of template tmpl.
func (ps *profileState) locked(tmpl, param string) bool {
	return slices.Contains(ps.cfg.LockedParams, tmpl+"."+param) || slices.Contains(ps.cfg.LockedParams, anyTemplate+"."+param)
}

// lockedProblem is the message for an annotation that sets a locked
// parameter to another value than the profile's.
func lockedProblem(key, val string, t *templates.Template, param, profile string) string {
	return fmt.Sprintf("annotation %s=%q: parameter %s of template %s is locked by profile %q", key, val, param, t.Name, profile)
}

// imageError is a rendered container whose image no prefix of the
// profile's allowedImages admits. Like a *templates.RenderError it depends
// on the values rendered, so the engine blames the annotations that set
// them.
type imageError struct {
	template, container, image string
	allowed                    []string
}

func (e *imageError) Error() string {
	return fmt.Sprintf("template %s: container %s: image %q is not allowed by the profile (allowedImages: %s)",
		e.template, e.container, e.image, strings.Join(e.allowed, ", "))
}

// checkImages returns an *imageError for the first container or init
// container of pl whose image starts with none of allowed; nil when
// allowed is empty (any image).
func checkImages(pl *plan, allowed []string) error {
	if len(allowed) == 0 {
		return nil
	}
	for _, l := range [...][]element{pl.inits, pl.sidecars} {
		for i := range l {
			el := &l[i]
			img, err := imageOf(el.raw)
			if err != nil {
				return fmt.Errorf("template %s: container %s: %w", pl.tmpls[el.tmpl].name, el.name, err)
			}
			if !imageAllowed(img, allowed) {
				return &imageError{template: pl.tmpls[el.tmpl].name, container: el.name, image: img, allowed: allowed}
			}
		}
	}
	return nil
}

// imageAllowed reports whether img starts with one of the prefixes.
func imageAllowed(img string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(img, p) {
			return true
		}
	}
	return false
}

// imageOf reads a rendered container's image.
func imageOf(raw []byte) (string, error) {
	var c struct {
		Image string `json:"image"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", err
	}
	if c.Image == "" {
		return "", errors.New("no image")
	}
	return c.Image, nil
}
