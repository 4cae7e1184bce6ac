package inject

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/graftdev/graft/internal/imageref"
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
		if err := imageref.CheckEntry(a); err != nil {
			return fmt.Errorf("allowedImages: %q: want an image reference, or one ending in '/', ':' or '@': %w", a, err)
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

// Locks reports whether the profile locks parameter param of template tmpl.
func (p *Profile) Locks(tmpl, param string) bool {
	return slices.Contains(p.LockedParams, tmpl+"."+param) || slices.Contains(p.LockedParams, anyTemplate+"."+param)
}

// locked reports whether the profile locks parameter param of template tmpl.
func (ps *profileState) locked(tmpl, param string) bool { return ps.cfg.Locks(tmpl, param) }

// guardParam checks a valid value val that the annotation key sets for
// parameter prm of t against the profile's guards: a locked parameter
// keeps the profile's value, and a value may not need a Pod Security level
// above the profile's maxLevel. It returns the problem and its reason, or
// "" when there is none. (graft export's policies give the same messages:
// export/params.go.)
func (ps *profileState) guardParam(t *templates.Template, prm *templates.Param, key, val string) (string, Reason) {
	if ps.locked(t.Name, prm.Name) && val != ps.baseValue(t.Name, prm) {
		return fmt.Sprintf("annotation %s=%q: %s", key, val, LockedRule(t.Name, prm.Name, ps.name)), ReasonInvalidParams
	}
	if l, ok := prm.PodSecurity[val]; ok && !ps.cfg.PodSecurity.MaxLevel.Allows(l) {
		return fmt.Sprintf("annotation %s=%q: %s", key, val, LevelRule(t.Name, prm.Name, val, l, ps.cfg.PodSecurity.MaxLevel, ps.name)), ReasonPodSecurity
	}
	return "", ReasonNone
}

// LockedRule is the rule an annotation breaks by setting parameter param
// of template tmpl, which profile locks, to another value.
func LockedRule(tmpl, param, profile string) string {
	return fmt.Sprintf("parameter %s of template %s is locked by profile %q", param, tmpl, profile)
}

// LevelRule is the rule an annotation breaks by setting parameter param
// of template tmpl to val, which needs Pod Security level need, above
// max, the most profile allows.
func LevelRule(tmpl, param, val string, need, max templates.Level, profile string) string {
	return fmt.Sprintf("template %s with %s=%q needs Pod Security level %s, and profile %q allows up to %s (podSecurity.maxLevel)",
		tmpl, param, val, need, profile, max)
}

// imageError is a rendered container whose image no entry of the
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
// container of pl whose image none of allowed admits (imageref.Admits:
// an entry matches up to '/', ':' or '@'); nil when allowed is empty
// (any image). Render refused images that are not references already.
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

// imageAllowed reports whether an entry of allowed admits img.
func imageAllowed(img string, allowed []string) bool {
	for _, a := range allowed {
		if imageref.Admits(a, img) {
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
