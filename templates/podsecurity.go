package templates

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// Level is a Pod Security Standards level, as the namespace label
// pod-security.kubernetes.io/enforce names it.
type Level string

const (
	// LevelRestricted is the strictest level, and what every built-in
	// template's defaults meet.
	LevelRestricted Level = "restricted"
	// LevelBaseline forbids known privilege escalations (host namespaces,
	// hostPath, privileged containers, capabilities beyond the default
	// set such as NET_ADMIN and NET_RAW, ...).
	LevelBaseline Level = "baseline"
	// LevelPrivileged allows anything.
	LevelPrivileged Level = "privileged"
)

// Levels lists the levels from the strictest.
func Levels() []Level { return []Level{LevelRestricted, LevelBaseline, LevelPrivileged} }

// ParseLevel reads a level's name.
func ParseLevel(s string) (Level, error) {
	switch l := Level(s); l {
	case LevelRestricted, LevelBaseline, LevelPrivileged:
		return l, nil
	}
	return "", fmt.Errorf("pod security level %q: want restricted, baseline or privileged", s)
}

// Rank orders levels: 0 for restricted, 1 baseline, 2 privileged, and 3
// for anything else (an unset or unknown level allows nothing stricter).
func (l Level) Rank() int {
	switch l {
	case LevelRestricted:
		return 0
	case LevelBaseline:
		return 1
	case LevelPrivileged:
		return 2
	}
	return 3
}

// Allows reports whether a namespace (or profile) at level l admits what
// needs level need.
func (l Level) Allows(need Level) bool { return need.Rank() <= l.Rank() }

// checkLevels validates a template's podSecurity declarations.
func (t *Template) checkLevels() error {
	if t.PodSecurity == "" {
		t.PodSecurity = LevelRestricted
	}
	if _, err := ParseLevel(string(t.PodSecurity)); err != nil {
		return fmt.Errorf("template %s: podSecurity: %w", t.Name, err)
	}
	for i := range t.Params {
		p := &t.Params[i]
		if len(p.PodSecurity) == 0 {
			continue
		}
		if p.Type != TypeEnum && p.Type != TypeBool {
			return fmt.Errorf("template %s: parameter %s: podSecurity applies to enum and bool parameters only", t.Name, p.Name)
		}
		for v, l := range p.PodSecurity {
			if _, err := ParseLevel(string(l)); err != nil {
				return fmt.Errorf("template %s: parameter %s: podSecurity[%s]: %w", t.Name, p.Name, v, err)
			}
			if _, err := p.Parse(v); err != nil {
				return fmt.Errorf("template %s: parameter %s: podSecurity names value %q: %w", t.Name, p.Name, v, err)
			}
			if !t.PodSecurity.Allows(l) {
				continue
			}
			return fmt.Errorf("template %s: parameter %s: podSecurity[%s]: %s is no more than the template's own level (%s)", t.Name, p.Name, v, l, t.PodSecurity)
		}
	}
	return nil
}

// LevelNeed is the Pod Security level a template needs with some values,
// and what raised it above restricted: the parameter and its value, or
// neither when it is the template's own level.
type LevelNeed struct {
	Level        Level
	Param, Value string
}

// NeedsLevel returns the level t declares for these values (overrides
// over the defaults): its own, raised by each parameter whose value
// declares more. The first parameter (in declaration order) at the
// highest level is the one named.
func (t *Template) NeedsLevel(overrides map[string]string) LevelNeed {
	need := LevelNeed{Level: t.PodSecurity}
	if need.Level == "" {
		need.Level = LevelRestricted
	}
	for i := range t.Params {
		p := &t.Params[i]
		v, ok := overrides[p.Name]
		if !ok {
			v = p.Default
		}
		if l, ok := p.PodSecurity[v]; ok && !need.Level.Allows(l) {
			need = LevelNeed{Level: l, Param: p.Name, Value: v}
		}
	}
	return need
}

// psaEvaluator is the API server's own Pod Security checks
// (k8s.io/pod-security-admission), built once: they are stateless.
var psaEvaluator = sync.OnceValues(func() (policy.Evaluator, error) {
	return policy.NewEvaluator(policy.DefaultChecks(), nil)
})

// MeetsLevel evaluates the containers, init containers and volumes a
// fragment adds with the API server's Pod Security checks, at the latest
// policy version, as a Pod holding nothing else, and returns the
// strictest level they meet and, for each stricter level, why not. Every
// security setting a sidecar relies on must be its own: a Pod's own
// settings, which a container inherits, are the Pod author's.
func MeetsLevel(f *Fragment) (Level, map[Level]string, error) {
	ev, err := psaEvaluator()
	if err != nil {
		return "", nil, fmt.Errorf("pod security checks: %w", err)
	}
	var spec corev1.PodSpec
	for _, l := range []struct {
		in  []Element
		out *[]corev1.Container
	}{{f.Containers, &spec.Containers}, {f.InitContainers, &spec.InitContainers}} {
		for _, el := range l.in {
			var c corev1.Container
			if err := json.Unmarshal(el.Raw, &c); err != nil {
				return "", nil, fmt.Errorf("container %s: %w", el.Name, err)
			}
			*l.out = append(*l.out, c)
		}
	}
	for _, el := range f.Volumes {
		var v corev1.Volume
		if err := json.Unmarshal(el.Raw, &v); err != nil {
			return "", nil, fmt.Errorf("volume %s: %w", el.Name, err)
		}
		spec.Volumes = append(spec.Volumes, v)
	}
	why := map[Level]string{}
	for _, l := range []Level{LevelRestricted, LevelBaseline} {
		res := policy.AggregateCheckResults(ev.EvaluatePod(
			psaapi.LevelVersion{Level: psaapi.Level(l), Version: psaapi.LatestVersion()}, &metav1.ObjectMeta{}, &spec))
		if res.Allowed {
			return l, why, nil
		}
		var parts []string
		for i, r := range res.ForbiddenReasons {
			if d := res.ForbiddenDetails[i]; d != "" {
				r += " (" + d + ")"
			}
			parts = append(parts, r)
		}
		slices.Sort(parts)
		why[l] = strings.Join(parts, "; ")
	}
	return LevelPrivileged, why, nil
}

// lintLevel compares what a fragment rendered with overrides needs with
// what the template declares for them, and returns the problem, if any:
// a declaration must be exact, neither too low (the engine would inject
// what the namespace refuses) nor too high (it would refuse Pods a
// namespace admits).
func (t *Template) lintLevel(f *Fragment, overrides map[string]string) string {
	got, why, err := MeetsLevel(f)
	if err != nil {
		return err.Error()
	}
	need := t.NeedsLevel(overrides)
	if got == need.Level {
		return ""
	}
	where := "the template's podSecurity"
	if need.Param != "" {
		where = fmt.Sprintf("parameter %s's podSecurity for %q", need.Param, need.Value)
	}
	if need.Level.Allows(got) {
		return fmt.Sprintf("meets Pod Security %s, but %s declares %s", got, where, need.Level)
	}
	// The checks of the strictest level it fails are why it needs got.
	failed := LevelRestricted
	if got == LevelPrivileged {
		failed = LevelBaseline
	}
	return fmt.Sprintf("needs Pod Security %s, but %s declares %s: %s", got, where, need.Level, why[failed])
}

// lintOS checks the fragment's containers set no security field the API
// server forbids for a Pod of an operating system the template declares
// (validateLinux and validateWindows in k8s.io/kubernetes
// pkg/apis/core/validation).
func (t *Template) lintOS(f *Fragment) []string {
	var out []string
	for _, l := range [][]Element{f.InitContainers, f.Containers} {
		for _, el := range l {
			var c corev1.Container
			if err := json.Unmarshal(el.Raw, &c); err != nil || c.SecurityContext == nil {
				continue
			}
			sc := c.SecurityContext
			for _, o := range t.Supports() {
				var bad []string
				switch o {
				case OSLinux:
					if sc.WindowsOptions != nil {
						bad = append(bad, "windowsOptions")
					}
				case OSWindows:
					for _, f := range []struct {
						set  bool
						name string
					}{
						{sc.AppArmorProfile != nil, "appArmorProfile"}, {sc.SELinuxOptions != nil, "seLinuxOptions"},
						{sc.SeccompProfile != nil, "seccompProfile"}, {sc.Capabilities != nil, "capabilities"},
						{sc.ReadOnlyRootFilesystem != nil, "readOnlyRootFilesystem"}, {sc.Privileged != nil, "privileged"},
						{sc.AllowPrivilegeEscalation != nil, "allowPrivilegeEscalation"}, {sc.ProcMount != nil, "procMount"},
						{sc.RunAsUser != nil, "runAsUser"}, {sc.RunAsGroup != nil, "runAsGroup"},
					} {
						if f.set {
							bad = append(bad, f.name)
						}
					}
				}
				if len(bad) > 0 {
					out = append(out, fmt.Sprintf("container %s: securityContext.%s cannot be set for a %s Pod, and the template declares os %s",
						c.Name, strings.Join(bad, ", securityContext."), o, o))
				}
			}
		}
	}
	return out
}
