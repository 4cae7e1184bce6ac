package export

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/names"
)

// The ValidatingAdmissionPolicy's CEL: the engine's parameter checks
// (inject/entry.go) with its messages, and the final-state guarantee.

// prefixLen is the length of names.Prefix, "graft.dev/".
const prefixLen = len(names.Prefix)

// problemVars compute "problem": "" for a Pod whose graft annotations are
// valid, else the engine's message for the first problem it would find:
// the template selection first, then the parameter annotations of the
// selected templates in key order (the order the API server sends them).
func (p *profile) problemVars() []celVar {
	allowed := celList(p.allowed)
	raw := `variables.annotations[` + celString(names.Templates) + `]`
	badName := "variables.selection.filter(n, !(n in " + allowed + "))"
	selectionProblem := celString(names.Templates) + ` in variables.annotations && size(` + badName + `) > 0 ? ` +
		celString("annotation "+names.Templates+"=") + ` + ` + celQuote(raw) + ` + ": template " + ` + celQuote(badName+"[0]") +
		` + " is not allowed here (allowed: ` + strings.Join(p.allowed, ", ") + `)" : ""`

	var chain strings.Builder
	for _, tn := range p.order {
		tmpl := p.tmpls[tn].tmpl
		for i := range tmpl.Params {
			prm := &tmpl.Params[i]
			chain.WriteString("k == " + celString(annotationKey(tn, prm.Name)) + " ? " +
				p.rule(tn, prm, "variables.annotations[k]") + " :\n  ")
		}
	}
	chain.WriteString(`"?"`) // a parameter the template does not have

	key := "variables.graftKeys[variables.bad[0]]"
	tmpl := key + `.substring(` + strconv.Itoa(prefixLen) + `).split(".")[0]`
	param := key + ".substring(" + strconv.Itoa(prefixLen+1) + " + size(" + tmpl + "))"
	problem := `variables.selectionProblem != "" ? variables.selectionProblem : size(variables.bad) == 0 ? "" :` + "\n" +
		`variables.rules[variables.bad[0]] == "?" ? "annotation " + ` + key + ` + ": template " + ` + tmpl +
		` + " has no parameter " + ` + celQuote(param) + " :\n" +
		`"annotation " + ` + key + ` + "=" + ` + celQuote("variables.annotations["+key+"]") +
		` + ": " + variables.rules[variables.bad[0]]`
	return []celVar{
		{"selectionProblem", selectionProblem},
		{"graftKeys", `variables.annotations.filter(k, k.startsWith(` + celString(names.Prefix) + `) && k.substring(` + strconv.Itoa(prefixLen) +
			`).contains(".") && k.substring(` + strconv.Itoa(prefixLen) + `).split(".")[0] in variables.templates).sort()`},
		{"rules", "variables.graftKeys.map(k,\n  " + chain.String() + ")"},
		{"bad", `lists.range(size(variables.rules)).filter(i, variables.rules[i] != "")`},
		{"problem", problem},
	}
}

// lenientMessage is the warning a lenient profile gives instead of a
// denial, saying what the engine does instead.
func lenientMessage() string {
	return `"graft: " + variables.problem + (variables.selectionProblem != "" ? "; using the profile's templates" : ` +
		`variables.rules[variables.bad[0]] == "?" ? "; ignored" : "; using the default")`
}

// guaranteeVars read what graft.dev/status says was injected: its flat
// "injected" list (container names are DNS labels, so a regular
// expression reads them); forged lists the Pod's containers it claims
// under a name of the profile's sidecars that are not what graft injects
// (their kind or image), as graft's own guarantee checks them
// (internal/registration).
func (p *profile) guaranteeVars() ([]celVar, error) {
	initOK, err := SidecarExpr(p.sidecars, true)
	if err != nil {
		return nil, err
	}
	containerOK, err := SidecarExpr(p.sidecars, false)
	if err != nil {
		return nil, err
	}
	claimed := "c.name in variables.injectedNames && c.name in " + SidecarNames(p.sidecars)
	return []celVar{
		{"status", `variables.annotations[?` + celString(names.Status) + `].orValue("")`},
		{"injectedNames", namesIn("variables.status", "injected")},
		{"podNames", `object.spec.?containers.orValue([]).map(c, c.name) + object.spec.?initContainers.orValue([]).map(c, c.name)`},
		{"forged", "object.spec.?initContainers.orValue([]).filter(c, " + claimed + " && !" + initOK + ") +\n" +
			"object.spec.?containers.orValue([]).filter(c, " + claimed + " && !" + containerOK + ")"},
	}, nil
}

// guaranteeChecks are the final-state validations: injected at all, and
// still holding every container graft injected.
func (p *profile) guaranteeChecks(policy string) []check {
	return []check{
		{expr: `variables.status != "" || size(variables.templates) == 0`,
			message: `"graft's MutatingAdmissionPolicy ` + policy + ` did not inject this Pod, and namespace " + request.namespace + ` +
				`" requires it (profile ` + p.name + `). Check the policy and the API server's log, and create the Pod again, ` +
				`or opt the Pod out with the label ` + names.Inject + `: \"` + names.OptOutValue + `\"."`,
			reason: "Forbidden"},
		{expr: "variables.injectedNames.all(n, n in variables.podNames)",
			message: celString("this Pod lacks containers graft injected ("+names.Status+": ") + ` + variables.status + ` +
				`"): an admission step after graft removed them. Create the Pod again; if it recurs, check the other mutating admission steps."`,
			reason: "Forbidden"},
		{expr: "size(variables.forged) == 0",
			message: `(object.spec.?initContainers.orValue([]).exists(c, c.name == variables.forged[0].name) ? "init container " : "container ") + ` +
				`variables.forged[0].name + " (image " + variables.forged[0].?image.orValue("") + ") is not the sidecar profile ` + p.name +
				` injects under that name, yet ` + names.Status + ` records it as graft's. Remove ` + names.Status + ` and the label ` +
				names.Injected + ` from the Pod's manifest (they were copied from another Pod or written by hand) and create it again."`,
			reason: "Forbidden"},
	}
}

// scopeChecks come after the parameter checks and before the guarantee
// (which would refuse such Pods less clearly): under onConflict: deny the
// engine's own denial of a conflict, then what the policies cannot do as
// the engine does: a parameter CEL cannot record (digestVars) and a record
// they cannot merge (recordVars).
func (p *profile) scopeChecks() []check {
	var out []check
	if !p.keep {
		// Only where the policies read the record as the engine does: one
		// they cannot read might own the names.
		out = append(out, check{expr: "size(variables.conflicts) == 0 || !(variables.recNone || variables.recOK)",
			message: p.conflictMessage(), reason: string(metav1.StatusReasonInvalid)})
	}
	unhashable := "variables.unhashable[0]"
	return append(out,
		check{expr: "size(variables.unhashable) == 0",
			message: `"annotation " + ` + unhashable + ` + "=" + ` + celQuote("variables.annotations["+unhashable+"]") +
				` + ": graft's exported policy injects only the profile's value of this parameter (` + names.Status + ` records a digest of ` +
				`the values, which CEL cannot compute for others); set it in the profile, or create the Pod through graft's webhook"`,
			reason: string(metav1.StatusReasonInvalid)},
		check{expr: `size(variables.templates) == 0 || variables.recNone || variables.recOK && size(variables.recStale) == 0`,
			message: `!variables.recOK ? ` + celString(recordFormMessage) + ` : ` +
				celString(names.Status+" records template ") + ` + variables.recStale[0].n + " at revision " + variables.recStale[0].r + ", digest " + ` +
				`variables.recStale[0].d + "; graft's webhook would upgrade it to revision ` + p.revision + `, digest " + ` +
				`variables.digests[variables.recStale[0].n] + ", its exported policy cannot: remove the annotation, or create the Pod through graft's webhook"`,
			reason: string(metav1.StatusReasonInvalid)})
}

// recordFormMessage refuses a record the policies cannot read.
const recordFormMessage = names.Status + " is not a version 2 record as graft writes it; graft's webhook rewrites or upgrades " +
	"such a record, its exported policy cannot: remove the annotation, or create the Pod through graft's webhook"

// check is one validation.
type check struct {
	expr, message, reason string
}
