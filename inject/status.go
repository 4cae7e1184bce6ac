package inject

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/graftdev/graft/internal/names"
)

// StatusAnnotation is the Pod annotation in which graft records what it
// injected.
const StatusAnnotation = names.Status

// Status is graft.dev/status: per template graft injected into a Pod, the
// revision and content digest it injected and exactly the objects graft
// itself added. docs/reference/status-format.md specifies the format. What the Pod already had (a user's env var of the same
// name, an annotation already set) is never recorded. `graft audit`,
// `graft explain` and Uninject read it; the request path reads the same
// format without allocating.
//
// Version 2 (what graft writes; keys in this order, empty lists left out):
//
//	{"version":2,"injected":["graft-proxy"],
//	 "templates":[{"name":"mesh-proxy","revision":"default","digest":"9f86d081884c7d65",
//	   "initContainers":["graft-proxy"],"annotations":["redirect.graft.dev/mode"],
//	   "appContainers":{"app":{"env":["OTEL_SERVICE_NAME"],"volumeMounts":["graft-otel"]}}}],
//	 "kept":[{"name":"secrets-agent","initContainers":["graft-secrets-agent"]}]}
//
// Version 1, written by graft before it, is still read:
// {"templates":["agent"],"containers":[...],"initContainers":[...],"volumes":[...]}.
// Its names count as graft's; it does not say which template added which,
// nor revisions or digests, so every template it names is stale.
type Status struct {
	// Version is 1 or 2.
	Version int `json:"version"`
	// Injected is every container and init container graft added, across
	// templates, in template order: the list the guarantee policy reads.
	Injected []string `json:"injected,omitempty"`
	// Templates holds one entry per template injected, in injection
	// order. A version 1 record gives names only.
	Templates []TemplateStatus `json:"templates,omitempty"`
	// Kept lists, per template, the Pod's own objects named like the
	// template's that graft left as they are under onConflict: keep
	// (never graft's: not in Injected), and the templates it left out.
	Kept []KeptStatus `json:"kept,omitempty"`
	// Legacy holds a version 1 record's names (nil for version 2).
	Legacy *LegacyStatus `json:"-"`
}

// KeptStatus is one template's entry in Status.Kept: the template (left
// out if the profile injects it) and the Pod's objects of its names.
type KeptStatus struct {
	Name           string   `json:"name"`
	InitContainers []string `json:"initContainers,omitempty"`
	Containers     []string `json:"containers,omitempty"`
	Volumes        []string `json:"volumes,omitempty"`
}

// TemplateStatus is what one template added to the Pod.
type TemplateStatus struct {
	Name string `json:"name"`
	// Revision is the revision that injected it (never a tag); empty in
	// version 1.
	Revision string `json:"revision"`
	// Digest is the first 16 hex digits of sha256 over the template's
	// source, a NUL, and its resolved parameters as sorted name=value
	// lines; empty in version 1.
	Digest           string   `json:"digest"`
	InitContainers   []string `json:"initContainers,omitempty"`
	Containers       []string `json:"containers,omitempty"`
	Volumes          []string `json:"volumes,omitempty"`
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
	// Annotations and Labels are the keys graft set (absent before).
	Annotations []string `json:"annotations,omitempty"`
	Labels      []string `json:"labels,omitempty"`
	// AppContainers maps each app container graft edited to what it added.
	AppContainers map[string]AppEdits `json:"appContainers,omitempty"`
	// PodResources is what graft added to the Pod's pod-level resources
	// (spec.resources) for the containers of this template, when the Pod
	// set them.
	PodResources *PodResources `json:"podResources,omitempty"`
}

// AppEdits is what graft added to one app container: env var names and
// volume mounts by volume name.
type AppEdits struct {
	Env          []string `json:"env,omitempty"`
	VolumeMounts []string `json:"volumeMounts,omitempty"`
}

// LegacyStatus is a version 1 record's names, which version 1 did not
// attribute to templates.
type LegacyStatus struct {
	Containers, InitContainers, Volumes []string
}

// ParseStatus reads a graft.dev/status value (the annotation's value, as
// a Pod's metadata holds it). It accepts version 2 and version 1 and
// skips keys it does not know; anything else is an error.
func ParseStatus(value string) (Status, error) {
	var r record
	if err := r.parse(value, isPlain(value)); err != nil {
		return Status{}, fmt.Errorf("%s: %w", names.Status, err)
	}
	st := Status{Version: r.version}
	text := func(raw string) string {
		v, _ := unquoteRaw(raw, strings.Contains(raw, `\`)) // validContent passed
		return v
	}
	texts := func(sp span) []string {
		var out []string
		for _, n := range r.list(sp) {
			out = append(out, text(n))
		}
		return out
	}
	for i := range r.entries {
		e := &r.entries[i]
		ts := TemplateStatus{Name: text(e.name), Revision: text(e.revision), Digest: text(e.digest),
			InitContainers: texts(e.lists[kInits]), Containers: texts(e.lists[kContainers]),
			Volumes: texts(e.lists[kVolumes]), ImagePullSecrets: texts(e.lists[kSecrets]),
			Annotations: texts(e.lists[kAnnotations]), Labels: texts(e.lists[kLabels])}
		for _, a := range r.apps[e.apps.from:e.apps.to] {
			if ts.AppContainers == nil {
				ts.AppContainers = map[string]AppEdits{}
			}
			prev := ts.AppContainers[text(a.name)]
			prev.Env = append(prev.Env, texts(a.env)...)
			prev.VolumeMounts = append(prev.VolumeMounts, texts(a.mounts)...)
			ts.AppContainers[text(a.name)] = prev
		}
		if e.podRes != "" {
			var pr PodResources
			if err := json.Unmarshal([]byte(e.podRes), &pr); err != nil {
				return Status{}, fmt.Errorf("graft.dev/status: podResources of %s: %w", ts.Name, err)
			}
			ts.PodResources = &pr
		}
		st.Templates = append(st.Templates, ts)
	}
	for i := range r.kept {
		e := &r.kept[i]
		st.Kept = append(st.Kept, KeptStatus{Name: text(e.name), InitContainers: texts(e.lists[kInits]),
			Containers: texts(e.lists[kContainers]), Volumes: texts(e.lists[kVolumes])})
	}
	if r.version == 1 {
		st.Legacy = &LegacyStatus{Containers: texts(r.legacy[kContainers]),
			InitContainers: texts(r.legacy[kInits]), Volumes: texts(r.legacy[kVolumes])}
		st.Injected = append(slicesClone(st.Legacy.InitContainers), st.Legacy.Containers...)
	} else {
		st.Injected = texts(r.injected)
	}
	return st, nil
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// Value returns s as graft writes it: version 2, canonical, with Injected
// computed from the templates. A version 1 status's names, which no
// template owns, are left out.
func (s Status) Value() string {
	var r record
	var buf []byte
	name := func(n string) string {
		start := len(buf)
		buf = appendEscaped(buf, n)
		return string(buf[start:])
	}
	names := func(l []string) span {
		sp := span{len(r.names), len(r.names)}
		for _, n := range l {
			r.names = append(r.names, name(n))
		}
		sp.to = len(r.names)
		return sp
	}
	for _, t := range s.Templates {
		e := recEntry{name: name(t.Name), revision: name(t.Revision), digest: name(t.Digest)}
		for k, l := range [numKinds][]string{t.InitContainers, t.Containers, t.Volumes, t.ImagePullSecrets, t.Annotations, t.Labels} {
			e.lists[k] = names(l)
		}
		from := len(r.apps)
		for c, a := range t.AppContainers {
			r.apps = append(r.apps, recApp{name: name(c), env: names(a.Env), mounts: names(a.VolumeMounts)})
		}
		e.apps = span{from, len(r.apps)}
		if t.PodResources != nil && (len(t.PodResources.Requests) > 0 || len(t.PodResources.Limits) > 0) {
			b, _ := json.Marshal(t.PodResources) // maps of strings always marshal, sorted
			e.podRes = string(b)
		}
		r.entries = append(r.entries, e)
	}
	for _, k := range s.Kept {
		e := recEntry{name: name(k.Name)}
		e.lists[kInits], e.lists[kContainers], e.lists[kVolumes] = names(k.InitContainers), names(k.Containers), names(k.Volumes)
		r.kept = append(r.kept, e)
	}
	r.version = 2
	var sc scratch
	// appendRecord writes the value escaped; appendEscaped writes only
	// escapes JSON defines, so unescaping cannot fail.
	value, _, _ := appendUnescaped(nil, b2s(sc.appendRecord(nil, &r, nil, nil)))
	return string(value)
}

// Template returns the entry for the template called name, or nil.
func (s *Status) Template(name string) *TemplateStatus {
	for i := range s.Templates {
		if s.Templates[i].Name == name {
			return &s.Templates[i]
		}
	}
	return nil
}
