package registration

import (
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/graftdev/graft/internal/names"
)

// The guarantee's CEL. kube-apiserver converts the Pod to unstructured
// form for every set of expressions it evaluates: the matchConditions,
// then (only if they all hold) the validations, the messageExpressions
// and the audit annotations, each set its own conversion, whether or not
// it has expressions. A Pod graft injected should cost one, so the one
// matchCondition is the whole check of a Pod that passes: it holds (and
// the validations run, to say what is wrong) only for a Pod that is
// neither left alone by graft nor carrying exactly graft's sidecars.
// matchConditions see neither namespaceObject nor variables: the
// condition is one expression, and binds what it reads more than once
// with a one-element list's all(). The validations repeat the check with
// namespaceObject (the namespace's graft.dev/rev) and say which rule
// failed.

// Expressions both parts read.
const (
	celAnnotations = "object.metadata.?annotations.orValue({})"
	celInits       = "object.spec.?initContainers.orValue([])"
	celContainers  = "object.spec.containers"
)

// claimedExpr lists the container names a graft.dev/status value (rec)
// says graft injected: version 2's "injected", and the per-template and
// version 1 lists of init containers and containers. Container names are
// DNS labels, so regular expressions read them from graft's compact
// JSON. A record written by hand may hide names from this reading; those
// containers are then not graft's, and refused by name (see fine).
func claimedExpr(rec string) string {
	return rec + `.findAll(` + strconv.Quote(`"(injected|initContainers|containers)":\[[^\]]*\]`) + `)` +
		`.map(x, x.substring(x.indexOf("[")).findAll(` + strconv.Quote(`"[^"]+"`) + `)).flatten()` +
		`.map(n, n.substring(1, size(n) - 1)).distinct()`
}

// exemptExpr holds for Pods graft leaves alone without writing a record:
// mirror Pods, Pods whose graft.dev/templates selects no template, and
// hostNetwork Pods where hostNetworkSkipped holds.
func exemptExpr(annotations, hostNetworkSkipped string) string {
	return strconv.Quote(names.MirrorAnnotation) + " in " + annotations + " ||\n" +
		"(" + strconv.Quote(names.Templates) + " in " + annotations + " && " +
		annotations + "[" + strconv.Quote(names.Templates) + `].replace(",", "").trim() == "") ||` + "\n" +
		"(object.spec.?hostNetwork.orValue(false) && " + hostNetworkSkipped + ")"
}

// kindExpr is the kind of container c, found among the init containers
// or not.
func kindExpr(c string, init bool) string {
	if !init {
		return strconv.Quote(kindContainer)
	}
	return "(" + c + `.?restartPolicy.orValue("") == "Always" ? ` + strconv.Quote(kindNative) + " : " + strconv.Quote(kindInit) + ")"
}

// imageOKExpr holds when container c's image is one sidecar s accepts.
func imageOKExpr(s, c string) string {
	img := c + `.?image.orValue("")`
	return s + `.image.exists(i, i.endsWith("*") ? ` + img + `.startsWith(i.substring(0, size(i) - 1)) : ` + img + " == i)"
}

// sidecarOKExpr holds when Pod container c (an init container or not) is
// what table t accepts under its name.
func sidecarOKExpr(t, c string, init bool) string {
	s := t + "[" + c + ".name]"
	return kindExpr(c, init) + " in " + s + ".kind && " + imageOKExpr(s, c)
}

// fineExpr holds when every name cl claims is a sidecar of table t that
// the Pod holds as t says, and no container of the Pod has a name of t
// that cl does not claim (inits: the Pod's init containers).
func fineExpr(cl, t, inits string) string {
	return cl + ".all(n, n in " + t + ")" +
		" &&\n" + inits + ".all(c, c.name in " + cl + " ? " + sidecarOKExpr(t, "c", true) + " : !(c.name in " + t + "))" +
		" &&\n" + celContainers + ".all(c, c.name in " + cl + " ? " + sidecarOKExpr(t, "c", false) + " : !(c.name in " + t + "))" +
		" &&\n" + cl + ".all(n, " + inits + ".exists(c, c.name == n) || " + celContainers + ".exists(c, c.name == n))"
}

// sidecarTable is the profile's sidecars as a CEL map: name -> {"kind":
// [...], "image": [...]}.
func sidecarTable(p *profileSpec) (string, error) {
	type entry struct {
		Kind  []string `json:"kind"`
		Image []string `json:"image"`
	}
	t := map[string]entry{}
	for n, s := range p.sidecars {
		t[n] = entry{s.Kinds, s.Images}
	}
	return celJSON(t)
}

// fastCheck is the matchCondition: true (evaluate the validations) unless
// the Pod is one graft leaves alone or holds exactly graft's sidecars. It
// must never be false for a Pod the validations refuse: where it cannot
// read the namespace (its graft.dev/rev), it is strict.
func (in *guaranteeInput) fastCheck(p *profileSpec, table string) string {
	allSkip := true
	for _, skip := range p.hostNetworkSkipped {
		allSkip = allSkip && skip
	}
	body := "[" + celAnnotations + "].all(a,\n" +
		exemptExpr("a", strconv.FormatBool(allSkip)) + " ||\n" +
		"[a[?" + strconv.Quote(names.Status) + `].orValue("")].all(rec, rec != "" &&` + "\n" +
		"[" + claimedExpr("rec") + "].all(cl,\n" +
		"[" + table + "].all(t,\n" +
		"[" + celInits + "].all(inits,\n" +
		fineExpr("cl", "t", "inits") + ")))))"
	return "!" + body
}

// variables are the validations' inputs, read with the namespace.
func (in *guaranteeInput) variables(p *profileSpec, table string) []admissionv1.Variable {
	owners, _ := celJSON(ownersOf(p))
	hostNet, _ := celJSON(p.hostNetworkSkipped)
	keep, _ := celJSON(p.keep)
	nsRev := "namespaceObject.metadata.?labels[?" + strconv.Quote(names.Revision) + `].orValue("")`
	rev := "variables.nsRevision"
	if p.podRevision {
		rev = "object.metadata.?labels[?" + strconv.Quote(names.Revision) + "].orValue(variables.nsRevision)"
	}
	known := append([]string{""}, in.revisions...)
	known = append(known, in.tags...)
	v := func(name, expr string) admissionv1.Variable {
		return admissionv1.Variable{Name: name, Expression: expr}
	}
	pod := func(c string) string {
		return "variables.inits.exists(c, c.name == " + c + ") || " + celContainers + ".exists(c, c.name == " + c + ")"
	}
	return []admissionv1.Variable{
		v("annotations", celAnnotations),
		v("status", "variables.annotations[?"+strconv.Quote(names.Status)+`].orValue("")`),
		v("claimed", claimedExpr("variables.status")),
		v("inits", celInits),
		v("sidecars", table),
		v("owners", owners),
		v("nsRevision", nsRev),
		v("revision", rev),
		v("knownRevision", "variables.nsRevision in "+celStrings(known)),
		v("exempt", exemptExpr("variables.annotations", hostNet+"[?variables.revision].orValue(true)")),
		v("selected", strconv.Quote(names.Templates)+" in variables.annotations ? variables.annotations["+strconv.Quote(names.Templates)+
			`].split(",").map(s, s.trim()).filter(s, s != "") : `+celStrings(p.templates)),
		// What graft.dev/status claims, against the Pod.
		v("removed", "variables.claimed.filter(n, n in variables.sidecars && !("+pod("n")+"))"),
		v("foreign", "variables.claimed.filter(n, !(n in variables.sidecars))"),
		v("wrong", "variables.inits.filter(c, c.name in variables.claimed && c.name in variables.sidecars && !("+
			sidecarOKExpr("variables.sidecars", "c", true)+")) +\n"+
			celContainers+".filter(c, c.name in variables.claimed && c.name in variables.sidecars && !("+
			sidecarOKExpr("variables.sidecars", "c", false)+"))"),
		// Containers under the names of the Pod's templates that the
		// record does not claim: graft did not inject them.
		v("unclaimed", keep+"[?variables.revision].orValue(false) ? [] :\n"+
			"(variables.inits + "+celContainers+").filter(c, c.name in variables.owners && "+
			"variables.owners[c.name] in variables.selected && !(c.name in variables.claimed))"),
		v("wrongWhy", wrongWhyExpr(p)),
		v("problem", in.problemExpr(p)),
	}
}

// ownersOf maps each sidecar name to its template.
func ownersOf(p *profileSpec) map[string]string {
	out := map[string]string{}
	for n, s := range p.sidecars {
		out[n] = s.Template
	}
	return out
}

// wrongWhyExpr says why variables.wrong[0], a container the record
// claims, is not the sidecar graft injects under its name.
func wrongWhyExpr(p *profileSpec) string {
	q := strconv.Quote
	w := "variables.wrong[0]"
	s := "variables.sidecars[" + w + ".name]"
	isInit := "variables.inits.exists(i, i.name == " + w + ".name)"
	return "size(variables.wrong) == 0 ? \"\" :\n" +
		isInit + " && !(" + kindExpr(w, true) + " in " + s + ".kind) ? " +
		q("graft injects it as ") + " + " + s + `.kind.join(" or ") + ` + q(" (native: an init container with restartPolicy: Always)") + " :\n" +
		"!" + isInit + " && !(" + q(kindContainer) + " in " + s + ".kind) ? " + q("graft injects it as an init container") + " :\n" +
		q("its image ") + " + " + w + `.?image.orValue("") + ` + q(" is not one profile "+p.name+" injects (") + " + " +
		s + `.image.join(", ") + ")"`
}

// problemExpr is "" for a Pod the guarantee admits, else the refusal's
// message: the first rule broken.
func (in *guaranteeInput) problemExpr(p *profileSpec) string {
	q := strconv.Quote
	kindWord := func(c string) string {
		return "(variables.inits.exists(i, i.name == " + c + `.name) ? "init container " : "container ")`
	}
	wantKind := func(n string) string {
		return "(variables.sidecars[" + n + `].kind[0] == "container" ? "container " : "init container ")`
	}
	revs := strings.Join(in.revisions, ", ")
	tags := "none"
	if len(in.tags) > 0 {
		tags = strings.Join(in.tags, ", ")
	}
	fresh := " Remove graft.dev/status and the label graft.dev/injected from the Pod's manifest (they were copied from " +
		"another Pod or written by hand) and create it again: graft injects its own."
	u := "variables.unclaimed[0]"
	return "variables.exempt ? \"\" :\n" +
		"!variables.knownRevision ? \"namespace \" + request.namespace + \" is labelled " + names.Revision + "=\" + variables.nsRevision + " +
		q(", which is neither a revision nor a tag graft serves (revisions: "+revs+"; tags: "+tags+"), so no graft webhook was "+
			"called for this Pod: label the namespace with one of them (kubectl label namespace ") + " + request.namespace + " +
		q(" "+names.Revision+"=<revision or tag> --overwrite), or remove the label for the default revision.") + " :\n" +
		"variables.status == \"\" ? \"graft did not inject this Pod, and namespace \" + request.namespace + " +
		q(" requires it (label "+names.Inject+"="+p.name+"). Check that graft is running (kubectl -n "+in.graftNS+
			" get pods) and create the Pod again, or opt the Pod out with the label "+names.Inject+`: "false".`) + " :\n" +
		"size(variables.removed) > 0 ? \"graft injected \" + variables.removed.map(n, " + wantKind("n") + " + n).join(\", \") + " +
		q(" into this Pod (graft.dev/status records it), but the Pod leaving admission lacks it: a mutating admission step "+
			"after graft removed it. Check the other mutating webhooks and MutatingAdmissionPolicies that change Pods in this "+
			"namespace; the Pod is refused because it would run without graft's sidecars.") + " :\n" +
		"size(variables.foreign) > 0 ? \"graft.dev/status says graft injected \" + variables.foreign[0] + " +
		q(", but no template of profile "+p.name+" injects a container of that name."+fresh) + " :\n" +
		"size(variables.wrong) > 0 ? " + kindWord("variables.wrong[0]") + " + variables.wrong[0].name + \" is not graft's: \" + " +
		"variables.wrongWhy + " + q(", yet graft.dev/status records it as graft's."+fresh) + " :\n" +
		"size(variables.unclaimed) > 0 ? \"the Pod has \" + " + kindWord(u) + " + " + u + ".name + " +
		"\", named like a sidecar template \" + variables.owners[" + u + ".name] + " +
		q(" injects, but graft.dev/status does not record it: graft did not inject it. Rename the container; profile "+p.name+
			" refuses Pods holding graft's names (onConflict: keep would admit them).") + " :\n" +
		`""`
}
