package audit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/fixture"
	"github.com/graftdev/graft/internal/names"
)

const (
	oldImage = "registry.invalid/agent:0.9.0"
	newImage = "ghcr.io/graftdev/agent:1.0.0" // the template's default
)

// engine builds the engine of a configuration with the given revisions,
// each with the profiles agent (the default), keep (onConflict: keep) and
// hostnet, injecting the agent template with image.
func engine(t *testing.T, revs map[string]string, tags ...inject.TagConfig) *inject.Revisions {
	t.Helper()
	set := fixture.Templates(t)
	var rc inject.RevisionsConfig
	for _, name := range []string{"default", "next", "retired"} {
		image, ok := revs[name]
		if !ok {
			continue
		}
		params := map[string]map[string]string{"agent": {"image": image}}
		rc.Revisions = append(rc.Revisions, inject.RevisionConfig{Templates: set, Config: inject.Config{
			Revision: name, DefaultProfile: "agent", Profiles: map[string]inject.Profile{
				"agent":   {Templates: []string{"agent"}, Params: params},
				"keep":    {Templates: []string{"agent"}, Params: params, OnConflict: inject.ConflictKeep},
				"hostnet": {Templates: []string{"agent"}, Params: params},
			}}})
	}
	rc.Tags = tags
	r, err := inject.NewRevisions(rc)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pod is a Pod as the API server would hold it before graft.
func pod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{}
	p.APIVersion, p.Kind = "v1", "Pod"
	p.Namespace, p.Name = "apps", "web-1"
	p.CreationTimestamp.Time = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	p.Spec.Containers = []corev1.Container{{Name: "app", Image: "registry.invalid/web:1"}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// injected returns p as eng's profile injects it (through the engine's
// own patch).
func injected(t *testing.T, eng *inject.Revisions, profile string, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	out, res, err := eng.Admit(nil, Review(Pod{Namespace: p.Namespace, Name: p.Name, JSON: raw}), inject.Options{Profile: profile})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != inject.DecisionInject {
		t.Fatalf("injecting: %s %s", res.Decision, res.Reason)
	}
	var rv struct {
		Response struct {
			Patch []byte `json:"patch"`
		} `json:"response"`
	}
	if err := json.Unmarshal(out, &rv); err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(rv.Response.Patch)
	if err != nil {
		t.Fatal(err)
	}
	if raw, err = patch.Apply(raw); err != nil {
		t.Fatal(err)
	}
	var q corev1.Pod
	if err := json.Unmarshal(raw, &q); err != nil {
		t.Fatal(err)
	}
	return &q
}

// slim is what the command hands Classify of a Pod.
func slim(t *testing.T, p *corev1.Pod) Pod {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	out := Pod{Namespace: p.Namespace, Name: p.Name, Created: p.CreationTimestamp.Time, Labels: p.Labels, JSON: raw}
	out.Status, out.HasStatus = p.Annotations[inject.StatusAnnotation]
	for _, c := range p.Spec.InitContainers {
		out.Containers = append(out.Containers, c.Name)
	}
	for _, c := range p.Spec.Containers {
		out.Containers = append(out.Containers, c.Name)
	}
	return out
}

func withStatus(value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[inject.StatusAnnotation] = value
	}
}

func withAnnotation(p *corev1.Pod, k, v string) *corev1.Pod {
	p = p.DeepCopy()
	p.Annotations[k] = v
	return p
}

func withLabel(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

func TestClassify(t *testing.T) {
	now := engine(t, map[string]string{"default": newImage, "next": "registry.invalid/agent:2.0.0"})
	old := engine(t, map[string]string{"default": oldImage})
	retired := engine(t, map[string]string{"retired": newImage})
	selected := Namespace{Name: "apps", Labels: map[string]string{names.Inject: "enabled"}}
	on := func(labels map[string]string) Namespace { return Namespace{Name: "apps", Labels: labels} }
	current := injected(t, now, "agent", pod())
	graftStatus := current.Annotations[inject.StatusAnnotation]
	ownAgent := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "graft-agent", Image: "registry.invalid/mine:1"}}
	}
	handmade := pod(ownAgent)
	// A record a user wrote by hand for a container of their own: graft's
	// format, but no template records the container.
	handwritten := pod(ownAgent, withStatus(`{"version":2,"injected":["graft-agent"]}`))

	tests := []struct {
		name   string
		ns     Namespace
		pod    *corev1.Pod
		class  Class
		cause  string
		detail string // a substring of Verdict.Detail
		rev    string // Verdict.Revision
		target string // Verdict.Target
	}{
		{name: "current", ns: selected, pod: current, class: Current, rev: "default", target: "default"},
		{name: "stale: another digest (image)", ns: selected, pod: injected(t, old, "agent", pod()), class: Stale, cause: CauseRevision,
			detail: "container graft-agent: image " + oldImage + " -> " + newImage, rev: "default", target: "default"},
		{name: "stale: another revision", ns: on(map[string]string{names.Inject: "enabled", names.Revision: "next"}), pod: current,
			class: Stale, cause: CauseRevision, detail: "image " + newImage + " -> registry.invalid/agent:2.0.0", rev: "default", target: "next"},
		{name: "stale: a revision no longer served", ns: selected, pod: injected(t, retired, "agent", pod()),
			class: Stale, cause: CauseRevisionGone, detail: "revision no longer served", rev: "retired", target: "default"},
		{name: "stale: a version 1 record", ns: selected,
			pod:   pod(withStatus(`{"templates":["agent"],"initContainers":["graft-agent"]}`), ownAgent),
			class: Stale, cause: CauseLegacyRecord, detail: "a version 1 record"},
		{name: "stale: another profile's templates only", ns: selected,
			pod: pod(withStatus(`{"version":2,"templates":[{"name":"otel-agent","revision":"default","digest":"0123456789abcdef"}]}`)),
			// The record's template is otel-agent, the profile injects agent.
			class: Stale, cause: CauseTemplateAbsent, detail: "agent: not injected", rev: "default", target: "default"},
		{name: "stale: would be denied now", ns: selected,
			// As if the parameter's rules had narrowed since graft injected it.
			pod:   withAnnotation(injected(t, now, "agent", pod()), "graft.dev/agent.logLevel", "loud"),
			class: Stale, cause: CauseWouldBeDenied, detail: "invalid-params"},
		{name: "missing: admitted without graft", ns: selected, pod: pod(), class: Missing, cause: CauseWithoutGraft,
			detail: "graft would inject agent (revision default)", target: "default"},
		{name: "missing: namespace labelled after the Pod", pod: pod(), class: Missing, cause: CauseLabelledAfter,
			ns:     Namespace{Name: "apps", Labels: selected.Labels, InjectLabelTime: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)},
			detail: "written at 2026-11-02T00:00:00Z, after the Pod was created at 2026-11-01T10:00:00Z"},
		{name: "missing: labelled before the Pod", pod: pod(), class: Missing, cause: CauseWithoutGraft,
			ns: Namespace{Name: "apps", Labels: selected.Labels, InjectLabelTime: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)}},
		{name: "missing: the profile label names no profile", ns: on(map[string]string{names.Inject: "mesh"}), pod: pod(),
			class: Missing, cause: CauseNotCalled, detail: "graft.dev/inject=mesh (its Namespace), which names no profile"},
		{name: "missing: the revision label names no revision", ns: on(map[string]string{names.Inject: "enabled", names.Revision: "2027-01"}), pod: pod(),
			class: Missing, cause: CauseNotCalled, detail: "names no revision or tag (known: default, next)"},
		{name: "missing: would be denied now", ns: selected,
			pod:   pod(func(p *corev1.Pod) { p.Annotations = map[string]string{"graft.dev/agent.logLevel": "loud"} }),
			class: Missing, cause: CauseWouldBeDenied, detail: `graft.dev/agent.logLevel`},
		{name: "conflict: onConflict deny", ns: selected, pod: handmade, class: Conflict, detail: `"graft-agent"`},
		{name: "conflict: onConflict keep", ns: on(map[string]string{names.Inject: "keep"}), pod: handmade, class: Conflict,
			detail: `template agent: the Pod holds init container "graft-agent", which graft did not inject`},
		{name: "spoofed: unreadable status", ns: selected, pod: pod(withStatus(`{"version":2,`)), class: Spoofed, cause: CauseUnreadable},
		{name: "spoofed: names absent containers", ns: selected, pod: pod(withStatus(graftStatus)), class: Spoofed, cause: CauseAbsent,
			detail: "graft-agent", rev: "default"},
		{name: "spoofed: even in a namespace graft does not select", ns: on(nil), pod: pod(withStatus(graftStatus)), class: Spoofed, cause: CauseAbsent},
		{name: "spoofed: no digest", ns: selected, pod: pod(withStatus(strings.Replace(graftStatus, `"digest":"`, `"digest":"x`, 1)),
			func(p *corev1.Pod) { p.Spec.InitContainers = current.Spec.InitContainers }), class: Spoofed, cause: CauseInconsistent},
		{name: "spoofed: injected lists what no template records", ns: selected, pod: handwritten, class: Spoofed, cause: CauseInconsistent,
			detail: "lists injected [graft-agent], but its templates record []"},
		{name: "opted out: Pod label", ns: selected, pod: pod(withLabel(names.Inject, "false")), class: OptedOut},
		{name: "opted out: no templates", ns: selected,
			pod: pod(func(p *corev1.Pod) { p.Annotations = map[string]string{"graft.dev/templates": ""} }), class: OptedOut, cause: "no-templates"},
		{name: "not selected: no label", ns: on(nil), pod: pod(), class: NotSelected, cause: "namespace-not-selected"},
		{name: "not selected: label says no", ns: on(map[string]string{names.Inject: "disabled"}), pod: pod(), class: NotSelected, cause: "namespace-not-selected"},
		{name: "not selected: injected, then the label went", ns: on(nil), pod: current, class: NotSelected, cause: "namespace-not-selected", rev: "default"},
		{name: "not selected: never-selected namespace", ns: Namespace{Name: "kube-system", Labels: selected.Labels}, pod: pod(),
			class: NotSelected, cause: "namespace-excluded"},
		{name: "not selected: hostNetwork", ns: selected, pod: pod(func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
			class: NotSelected, cause: "host-network"},
	}
	a := New(now)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := a.Classify(tt.ns, slim(t, tt.pod))
			if err != nil {
				t.Fatal(err)
			}
			if v.Class != tt.class || v.Cause != tt.cause {
				t.Errorf("class %s/%s, want %s/%s (detail: %s)", v.Class, v.Cause, tt.class, tt.cause, v.Detail)
			}
			if !strings.Contains(v.Detail, tt.detail) {
				t.Errorf("detail %q, want it to contain %q", v.Detail, tt.detail)
			}
			if tt.rev != "" && v.Revision != tt.rev {
				t.Errorf("revision %q, want %q", v.Revision, tt.rev)
			}
			if tt.target != "" && v.Target != tt.target {
				t.Errorf("target %q, want %q", v.Target, tt.target)
			}
		})
	}
}
