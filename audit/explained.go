package audit

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
)

// fromExplanation classifies a Pod in a selected namespace from the
// engine's explanation of it.
func (a *Auditor) fromExplanation(v Verdict, ns Namespace, p Pod, st *inject.Status, ex *inject.Explanation) Verdict {
	res := ex.Result
	switch res.Decision {
	case inject.DecisionSkip:
		switch res.Reason {
		case inject.ReasonAlreadyInjected:
		case inject.ReasonOptedOut, inject.ReasonNoTemplates:
			return v.with(OptedOut, res.Reason.String(), "graft skips this Pod: "+res.Reason.String())
		default: // mirror-pod, host-network, namespace-excluded
			return v.with(NotSelected, res.Reason.String(), "graft skips this Pod: "+res.Reason.String())
		}
	case inject.DecisionDeny:
		if res.Reason == inject.ReasonConflict {
			v.Templates = planStates(ex)
			return v.with(Conflict, "", ex.Message)
		}
		msg := fmt.Sprintf("graft would deny it now (%s): %s", res.Reason, ex.Message)
		if st == nil {
			return v.with(Missing, CauseWouldBeDenied, msg)
		}
		return v.with(Stale, CauseWouldBeDenied, msg)
	case inject.DecisionFailOpen:
		return v.with(Missing, CauseWithoutGraft, "graft cannot inject it now: "+res.Reason.String())
	}
	v.Templates = planStates(ex)
	for _, t := range v.Templates {
		if t.State == inject.StateConflict {
			return v.with(Conflict, "", fmt.Sprintf("template %s: the Pod holds %s, which graft did not inject", t.Name, t.Conflict))
		}
	}
	if st == nil {
		tmpls := make([]string, len(v.Templates))
		for i, t := range v.Templates {
			tmpls[i] = t.Name
		}
		want := fmt.Sprintf("graft would inject %s (revision %s)", strings.Join(tmpls, ", "), v.Target)
		if at := ns.InjectLabelTime; !at.IsZero() && at.After(p.Created) {
			return v.with(Missing, CauseLabelledAfter, fmt.Sprintf("%s; namespace %s's %s label was written at %s, after the Pod was created at %s",
				want, ns.Name, names.Inject, at.UTC().Format(time.RFC3339), p.Created.UTC().Format(time.RFC3339)))
		}
		return v.with(Missing, CauseWithoutGraft, want+"; the Pod was admitted without graft (failing open, or the webhook not called)")
	}
	if len(v.Templates) == 0 {
		// The profile injects nothing into this Pod, yet the record names
		// templates: another profile's, which graft leaves alone.
		return v.with(Current, "", "recorded templates are another profile's; this profile injects none")
	}
	var stale []string
	cause := ""
	for i := range v.Templates {
		t := &v.Templates[i]
		switch t.State {
		case inject.StateMissing:
			stale = append(stale, t.Name+": not injected")
			cause = firstOf(cause, CauseTemplateAbsent)
		case inject.StateStale:
			c := CauseRevision
			switch {
			case st.Version == 1:
				c = CauseLegacyRecord
			case !slices.Contains(a.engine.Revisions(), t.From.Revision):
				c = CauseRevisionGone
			}
			cause = firstOf(cause, c)
			t.Differs = differs(p.JSON, ex.Patch, st.Template(t.Name), st)
			stale = append(stale, staleLine(t, c))
		}
	}
	if len(stale) > 0 {
		return v.with(Stale, cause, strings.Join(stale, "; "))
	}
	if res.Decision == inject.DecisionInject {
		return v.with(Stale, CauseIncompleteCopy, fmt.Sprintf("recorded as current, yet graft would patch it (%d operations)", res.PatchOps))
	}
	return v.with(Current, "", "")
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// staleLine says what changed for one stale template.
func staleLine(t *Template, cause string) string {
	from := t.From.Revision + "/" + t.From.Digest
	switch cause {
	case CauseLegacyRecord:
		from = "a version 1 record"
	case CauseRevisionGone:
		from += " (revision no longer served)"
	}
	line := fmt.Sprintf("%s: %s -> %s/%s", t.Name, from, t.To.Revision, t.To.Digest)
	if len(t.Differs) > 0 {
		line += " (" + strings.Join(t.Differs, "; ") + ")"
	}
	return line
}

// planStates turns the engine's plan into the report's templates.
func planStates(ex *inject.Explanation) []Template {
	var out []Template
	for _, ts := range ex.Plan {
		t := Template{Name: ts.Name, State: ts.State, To: Version{ts.Revision, ts.Digest}, Conflict: ts.Conflict}
		if ts.Recorded != nil {
			t.From = Version{ts.Recorded.Revision, ts.Recorded.Digest}
		}
		out = append(out, t)
	}
	return out
}
