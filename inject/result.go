package inject

import (
	"slices"
	"strings"
)

// Decision is what the engine did with a request.
type Decision uint8

const (
	// DecisionSkip: allowed, unchanged; Reason says why.
	DecisionSkip Decision = iota
	// DecisionInject: allowed with a JSONPatch.
	DecisionInject
	// DecisionDeny: allowed=false; Reason says why.
	DecisionDeny
	// DecisionFailOpen: a failure answered as allowed, unchanged, with a
	// warning, because the profile's failure mode is "allow".
	DecisionFailOpen
	numDecisions
)

var decisionNames = [numDecisions]string{"skip", "inject", "deny", "fail-open"}

// String returns the decision's name as used in metrics and logs.
func (d Decision) String() string {
	if d < numDecisions {
		return decisionNames[d]
	}
	return "unknown"
}

// Decisions lists every decision, for pre-binding metric labels.
func Decisions() []Decision {
	out := make([]Decision, numDecisions)
	for i := range out {
		out[i] = Decision(i)
	}
	return out
}

// Operation is the admission operation of a request.
type Operation uint8

const (
	OpUnknown Operation = iota
	OpCreate
	OpUpdate
	OpDelete
	OpConnect
	numOperations
)

var operationNames = [numOperations]string{"UNKNOWN", "CREATE", "UPDATE", "DELETE", "CONNECT"}

func (o Operation) String() string {
	if o < numOperations {
		return operationNames[o]
	}
	return "UNKNOWN"
}

// Operations lists every operation, for pre-binding metric labels.
func Operations() []Operation {
	out := make([]Operation, numOperations)
	for i := range out {
		out[i] = Operation(i)
	}
	return out
}

// Result describes one admission for the server's metrics and logs.
//
// UID, Namespace and Name alias the request body: they are valid only until
// the body's buffer is reused. Copy them before handing them to anything
// that outlives the request (an async logger, a cache).
type Result struct {
	Decision  Decision
	Reason    Reason
	Operation Operation
	// Profile is the profile that served the request (engine-owned).
	Profile string
	// Revision is the revision that served the request, never a tag
	// (engine-owned); set by Revisions, empty from a bare Engine.
	Revision string
	// Templates lists the templates injected (engine-owned, read-only):
	// the plan's, less those Kept out.
	Templates []string
	// Kept lists the templates left out under onConflict: keep, as the
	// response's warnings say; nil when none were (the usual case, which
	// allocates nothing).
	Kept []Kept
	// PatchOps and PatchBytes describe the patch (before base64).
	PatchOps   int
	PatchBytes int
	// Warnings counts the warnings returned to the client.
	Warnings int
	DryRun   bool

	UID       []byte
	Namespace []byte
	// Name is metadata.name, or metadata.generateName when name is empty.
	Name []byte
}

// Kept is a template an admission left out under onConflict: keep,
// because the Pod already holds an object of its name that graft did not
// inject. It is read from the notices that write the webhook's warnings,
// so the webhook, graft inject's summary and graft explain say the same.
type Kept struct {
	Template string
	// Why is what the warning says after "not injected: ", e.g.
	// `the Pod already has container "graft-proxy", which graft did not
	// inject`.
	Why string
}

// keptTemplates are the templates notices say were left out; nil when
// none were. Its strings are copies: notices alias the request.
func keptTemplates(notices []notice) []Kept {
	var out []Kept
	for i := range notices {
		n := &notices[i]
		if n.kind == noticeConflict {
			out = append(out, Kept{Template: strings.Clone(n.template), Why: string(n.appendKeptWhy(nil))})
		}
	}
	return out
}

// injectedTemplates is templates less the kept ones: templates itself
// when none were kept.
func injectedTemplates(templates []string, kept []Kept) []string {
	if len(kept) == 0 {
		return templates
	}
	out := make([]string, 0, len(templates))
	for _, t := range templates {
		if !slices.ContainsFunc(kept, func(k Kept) bool { return k.Template == t }) {
			out = append(out, t)
		}
	}
	return out
}
