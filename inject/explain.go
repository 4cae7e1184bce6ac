package inject

import (
	"encoding/json"

	"github.com/graftdev/graft/internal/names"
)

// Explanation is what `graft explain` shows: the decision and everything
// that led to it.
type Explanation struct {
	Result Result
	// Selection says which revision served and how it was chosen (set by
	// Revisions.Explain).
	Selection Selection
	Profile   string
	Templates []string
	Params    []ParamValue
	Warnings  []string
	// Message is the deny message, if denied.
	Message string
	// Patch is the RFC 6902 patch (JSON), if any.
	Patch []byte
	// Response is the whole AdmissionReview response.
	Response []byte

	// Status is the Pod's graft.dev/status as read; nil when the Pod has
	// none or it cannot be read (StatusError then says why).
	Status      *Status
	StatusError string
	// Plan is, for each template the profile would inject into this Pod
	// now, in injection order, what graft.dev/status would record of it
	// and how the Pod's record compares: what `graft explain` and
	// `graft audit` report per template.
	Plan []TemplateState
	// Absent lists the containers the status says graft injected that the
	// Pod does not hold (audit: spoofed, or removed after admission).
	Absent []string
	// Foreign lists the Pod's objects named like those of templates the
	// plan does not inject, e.g. `container "graft-secrets-agent" (...)`:
	// each a conflict.
	Foreign []string
	// Reserved names the first annotation or label in graft's domains the
	// Pod may not set, e.g. `annotation redirect.graft.dev/mode`.
	Reserved []string
}

// Template states, as TemplateState.State reports them.
const (
	// StateCurrent: the status records this template at the plan's
	// revision and digest.
	StateCurrent = "current"
	// StateStale: the status records it at another revision or digest,
	// or in version 1 (which has neither): graft upgrades it on the next
	// CREATE through graft.
	StateStale = "stale"
	// StateMissing: the status does not record it: graft would inject it.
	StateMissing = "missing"
	// StateConflict: the Pod holds an object named like one of the
	// template's that is not graft's render of it, or one that collides
	// with what the template adds: denied, or the template left out under
	// onConflict: keep.
	StateConflict = "conflict"
)

// TemplateState compares one template of the plan with the Pod's status.
type TemplateState struct {
	// Name, Revision and Digest are what graft would record now.
	Name, Revision, Digest string
	// State is StateCurrent, StateStale, StateMissing or StateConflict
	// (a stale template's conflicts show once it is upgraded).
	State string
	// Recorded is the status's entry for the template, if any.
	Recorded *TemplateStatus
	// Conflict names the conflicting object, e.g. `container "graft-proxy"`.
	Conflict string
	// Why says why an object of the template's name is not graft's, e.g.
	// `its securityContext differs from template mesh-proxy's`.
	Why string
}

// explainStatus fills ex's Status, Plan and Absent for p under pl, with
// ix the names graft's templates render.
func explainStatus(ex *Explanation, pl *plan, p *pod, ix *sidecarIndex, podRevision bool) {
	var r record
	if raw, ok := p.annotation(names.Status); ok {
		value, plain, err := appendUnescaped(nil, raw)
		var st Status
		if err == nil {
			st, err = ParseStatus(string(value))
		}
		if err != nil {
			ex.StatusError = err.Error()
		} else {
			ex.Status = &st
			_ = r.parse(string(value), plain) // ParseStatus read it
		}
	}
	// What of the Pod is graft's, as merge would judge it.
	js := &scratch{cur: &r}
	js.judge(pl, ix, p, &budget{})
	js.skipped = resetBools(nil, len(pl.tmpls))
	for ti := range pl.tmpls {
		t := &pl.tmpls[ti]
		ts := TemplateState{Name: t.name, Revision: t.revision, Digest: t.digest, State: StateMissing}
		if ex.Status != nil {
			if ts.Recorded = ex.Status.Template(t.name); ts.Recorded != nil {
				ts.State = StateCurrent
				if ex.Status.Version == 1 || ts.Recorded.Revision != t.revision || ts.Recorded.Digest != t.digest {
					ts.State = StateStale
				}
			}
		}
		if ts.State != StateStale {
			if c := js.named[ti]; c.object != "" {
				ts.State, ts.Conflict, ts.Why = StateConflict, c.object+` "`+c.name+`"`, string(appendWhyNot(nil, &c))
			} else if c, found := findCollision(pl, ti, p, js, &budget{}); found {
				ts.State, ts.Conflict = StateConflict, string(appendCollision(nil, &c, t.name, false))
			}
		}
		ex.Plan = append(ex.Plan, ts)
	}
	for i := range js.foreign {
		c := &js.foreign[i]
		ex.Foreign = append(ex.Foreign, c.object+` "`+c.name+`" (`+string(appendWhyNot(nil, c))+`)`)
	}
	if c, found := js.reservedKey(pl, p, podRevision); found {
		ex.Reserved = append(ex.Reserved, c.object+" "+c.name)
	}
	if ex.Status != nil {
		for _, n := range ex.Status.Injected {
			if !p.hasContainer(n) && !p.hasInit(n) {
				ex.Absent = append(ex.Absent, n)
			}
		}
	}
}

// ParamValue is one template parameter's effective value and its source.
type ParamValue struct {
	Template string
	Param    string
	Value    string
	// Source is "default", "profile" or "annotation".
	Source string
}

func responseWarnings(resp []byte) []string {
	var r struct {
		Response struct {
			Warnings []string `json:"warnings"`
		} `json:"response"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		return nil
	}
	return r.Response.Warnings
}
