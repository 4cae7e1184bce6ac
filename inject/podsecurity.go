package inject

import (
	"fmt"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// Pod Security. Pod Security admission runs after the mutating webhooks,
// on the final Pod, and refuses it when any container breaks the level
// its namespace enforces, naming the container: a user would read a bare
// refusal about graft's sidecar, which they did not write. So every
// template declares the level it needs (templates.Template.NeedsLevel,
// checked by lint with the API server's own checks), a profile bounds
// what its Pods may need (podSecurity.maxLevel, default restricted), and
// a profile allowed more is registered once per namespace level
// (internal/registration splits its webhook on the namespace label
// pod-security.kubernetes.io/enforce), so that the route tells graft the
// level (Options.PodSecurity) and graft refuses a Pod the namespace would
// refuse with its own message, naming template, parameter and value.

// PodSecurity bounds the Pod Security level a profile's sidecars may need.
type PodSecurity struct {
	// MaxLevel is the highest Pod Security level (restricted, baseline or
	// privileged) what the profile injects may need; default restricted,
	// which every built-in template meets with any value but mesh-proxy's
	// trafficRedirect: init-container (privileged). A profile whose own
	// values need more is refused at start; a Pod whose annotations ask
	// for more is refused (reason pod-security), naming the annotation.
	// Above restricted, the profile's webhooks are registered once per
	// namespace level, and graft also refuses Pods whose namespace
	// enforces less than what it would inject.
	MaxLevel templates.Level `json:"maxLevel,omitempty"`
}

func (p *PodSecurity) defaults() error {
	if p.MaxLevel == "" {
		p.MaxLevel = templates.LevelRestricted
	}
	if _, err := templates.ParseLevel(string(p.MaxLevel)); err != nil {
		return fmt.Errorf("podSecurity.maxLevel: %w", err)
	}
	return nil
}

// levelNeed is the Pod Security level a plan needs, and the template (and
// parameter and value, if one raised it) that needs it.
type levelNeed struct {
	templates.LevelNeed
	template string
}

// planLevel is the highest level the templates need with their values;
// the first template (in plan order) at that level is the one named.
func planLevel(tmpls []*templates.Template, params map[string]map[string]string) levelNeed {
	out := levelNeed{LevelNeed: templates.LevelNeed{Level: templates.LevelRestricted}}
	for _, t := range tmpls {
		if n := t.NeedsLevel(params[t.Name]); !out.Level.Allows(n.Level) {
			out = levelNeed{LevelNeed: n, template: t.Name}
		}
	}
	return out
}

// what names the template, and the parameter and value that raised its level.
func (n levelNeed) what() string {
	if n.Param == "" {
		return "template " + n.template
	}
	return fmt.Sprintf("template %s with %s=%q", n.template, n.Param, n.Value)
}

// levelError is a plan that needs more than the profile's maxLevel. Like
// a *templates.RenderError it depends on the values rendered, so the
// engine blames the annotations that set them.
type levelError struct {
	need    levelNeed
	max     templates.Level
	profile string
}

func (e *levelError) Error() string {
	if e.need.Param != "" {
		return LevelRule(e.need.template, e.need.Param, e.need.Value, e.need.Level, e.max, e.profile)
	}
	return fmt.Sprintf("%s needs Pod Security level %s, and profile %q allows up to %s (podSecurity.maxLevel)",
		e.need.what(), e.need.Level, e.profile, e.max)
}

// checkLevel returns a *levelError when pl needs more than ps allows.
func checkLevel(pl *plan, ps *profileState) error {
	if max := ps.cfg.PodSecurity.MaxLevel; !max.Allows(pl.level.Level) {
		return &levelError{need: pl.level, max: max, profile: ps.name}
	}
	return nil
}

// namespaceDenials writes, for each namespace level that does not allow
// what pl needs, the message refusing a Pod there: the request path only
// picks one (nsDenial).
func namespaceDenials(pl *plan) {
	for _, l := range templates.Levels() {
		if l.Allows(pl.level.Level) {
			continue
		}
		pl.nsDeny[l.Rank()] = fmt.Sprintf("graft refuses this Pod: %s needs Pod Security level %s, and its namespace enforces %s (label %s); "+
			"a Pod there cannot run it", pl.level.what(), pl.level.Level, l, names.PodSecurityEnforce)
	}
}

// nsDenial is the message refusing a Pod in a namespace enforcing level,
// or "" when the namespace allows what pl injects; an unknown level (the
// route did not say) allows everything.
func (pl *plan) nsDenial(level templates.Level) string {
	if r := level.Rank(); r < len(pl.nsDeny) {
		return pl.nsDeny[r]
	}
	return ""
}
