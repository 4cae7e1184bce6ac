package registration

import (
	"fmt"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/imageref"
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
// condition is one expression, binding what it reads more than once with
// a one-element list's all(). It runs for every Pod of the namespace, so
// it reads the profile's sidecars from constant lists ("<name>|<kind>|
// <image>"), which CEL looks up as sets, rather than a map literal, which
// CEL would build on every evaluation. The validations read the
// namespace (its graft.dev/rev) and say which rule failed.
//
// What graft.dev/status claims: the container names, quoted, in its
// "injected" list (version 2), or in its "initContainers" and
// "containers" lists (version 1, which has no "injected"). Container
// names are DNS labels and the record is graft's compact JSON, so
// splitting the text finds the lists without a regular expression. A
// record written by hand can claim or hide names at will: what it claims
// must be in the Pod as graft injects it, and what it hides must not be
// in the Pod.
//
// The expressions are the same for every profile and configuration;
// data (markers "@@NAME@@") fills them in: celSkeleton and celData. The
// Helm chart fills in the same skeleton (files/guarantee-cel.yaml) with
// data it computes from its values.

// Markers the data replaces.
const (
	mProfile        = "@@PROFILE@@"
	mGraftNamespace = "@@GRAFT_NAMESPACE@@"
	mRevisions      = "@@REVISIONS@@"
	mTags           = "@@TAGS@@"
	mNames          = "@@SIDECAR_NAMES@@"
	mKindsImages    = "@@SIDECAR_KINDS_IMAGES@@"
	mImagePrefixes  = "@@SIDECAR_IMAGE_PREFIXES@@"
	mSidecars       = "@@SIDECARS@@"
	mOwners         = "@@OWNERS@@"
	mTemplates      = "@@TEMPLATES@@"
	mKnownRevisions = "@@KNOWN_REVISIONS@@"
	mHostNetAlways  = "@@HOSTNETWORK_ALWAYS_SKIPPED@@"
	mHostNetSkipped = "@@HOSTNETWORK_SKIPPED@@"
	mKeep           = "@@KEEP@@"
	mPodRevision    = "@@POD_REVISION@@"
	celAnnotations  = "object.metadata.?annotations.orValue({})"
	// celAnnotationsNoDefault is the annotations, an optional.
	celAnnotationsNoDefault = "object.metadata.?annotations"
	celInits                = "object.spec.?initContainers.orValue([])"
	celContainers           = "object.spec.containers"
	celInitKind             = `(c.?restartPolicy.orValue("") == "Always" ? "native" : "init")`
	celImage                = `c.?image.orValue("")`
	quotedName              = `"\"" + c.name + "\""`
	// celClaims is the text of the lists of container names the record
	// rec says graft injected.
	// A versioned record without "injected" claims nothing (its
	// "kept" entries name the Pod's own objects); only version 1 lists
	// containers at the top level.
	celClaims = `(rec.contains("\"injected\":[") ? rec.split("\"injected\":[")[1].split("]")[0] :` + "\n" +
		`  rec.contains("\"version\":") ? "" :` + "\n" +
		`  (rec.contains("\"initContainers\":[") ? rec.split("\"initContainers\":[")[1].split("]")[0] : "") + "," +` + "\n" +
		`  (rec.contains("\"containers\":[") ? rec.split("\"containers\":[")[1].split("]")[0] : ""))`
	celStatusKey     = `"` + names.Status + `"`
	celTemplatesKey  = `"` + names.Templates + `"`
	celMirrorKey     = `"` + names.MirrorAnnotation + `"`
	celRevisionLabel = `"` + names.Revision + `"`
)

// celStatusOf is graft.dev/status of optional annotations, or "".
func celStatusOf(annotations string) string {
	return annotations + "[?" + celStatusKey + `].orValue("")`
}

// exemptExpr holds for Pods graft leaves alone without writing a record:
// mirror Pods, Pods whose graft.dev/templates selects no template,
// hostNetwork Pods where hostNetworkSkipped holds, and Pods for another
// operating system than the templates' (Linux): by spec.os.name, a
// kubernetes.io/os node selector, or a required node affinity every term
// of which leaves Linux out (inject/os.go decides the same; exempting more
// Pods than graft skips would only leave them to graft).
func exemptExpr(annotations, hostNetworkSkipped string) string {
	return celMirrorKey + " in " + annotations + " ||\n" +
		"(" + celTemplatesKey + " in " + annotations + " && " +
		annotations + "[" + celTemplatesKey + `].replace(",", "").trim() == "") ||` + "\n" +
		"(object.spec.?hostNetwork.orValue(false) && " + hostNetworkSkipped + ") ||\n" +
		OtherOSExpr
}

// OtherOSExpr is CEL that holds for a Pod that cannot run on Linux nodes,
// the Pods graft skips with reason os (the exported policies skip them too).
const OtherOSExpr = `object.spec.?os.name.orValue("linux") != "linux" ||` + "\n" +
	`object.spec.?nodeSelector[?"` + names.OSLabel + `"].orValue("linux") != "linux" ||` + "\n" +
	`[object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([])].all(terms,` + "\n" +
	`  size(terms) > 0 && terms.all(t, t.?matchExpressions.orValue([]).exists(e, e.key == "` + names.OSLabel + `" &&` + "\n" +
	`    (e.operator == "In" && !("linux" in e.?values.orValue([])) || e.operator == "NotIn" && "linux" in e.?values.orValue([]) ||` + "\n" +
	`     e.operator == "DoesNotExist"))))`

// sidecarOKExpr holds when container c, whose kind is kind (a CEL string
// expression), is a sidecar of the profile as graft injects it: its
// "<name>|<kind>|<image>" in the constant list (a set lookup: CEL plans
// `in` on a constant list as one), or starting with a prefix entry and
// an image reference, as the engine requires (imageref).
func sidecarOKExpr(kind string) string {
	k := "c.name + \"|\" + " + kind + " + \"|\" + " + celImage
	return "((" + k + ") in " + mKindsImages + " ||\n" +
		"  " + mImagePrefixes + ".exists(x, (" + k + ").startsWith(x)) && " + imageref.CELValid(celImage) + ")"
}

// celSkeleton is the policy's CEL with markers for the data.
func celSkeleton() ([]admissionv1.MatchCondition, []admissionv1.Variable, []admissionv1.Validation) {
	// The sidecars first: a Pod graft injected is what the condition
	// sees most, and || stops at the first true. The names' list is
	// written out at each use: `in` a constant list is a set lookup.
	fast := "!([" + celStatusOf(celAnnotationsNoDefault) + "].all(rec, rec != \"\" &&\n" +
		"[" + celClaims + "].all(cl,\n" +
		"[" + celInits + "].all(inits,\n" +
		"inits.all(c, !(c.name in " + mNames + ") || cl.contains(" + quotedName + ") &&\n" +
		sidecarOKExpr(celInitKind) + ") &&\n" +
		celContainers + ".all(c, !(c.name in " + mNames + ") || cl.contains(" + quotedName + ") &&\n" +
		sidecarOKExpr(`"container"`) + ") &&\n" +
		// Every sidecar in the Pod is claimed (above): as many claimed as
		// in the Pod means every claimed one is in the Pod.
		"size(" + mNames + `.filter(n, cl.contains("\"" + n + "\""))) ==` + "\n" +
		"  size(inits.filter(c, c.name in " + mNames + ")) + size(" + celContainers + ".filter(c, c.name in " + mNames + "))))) ||\n" +
		"[" + celAnnotations + "].all(a,\n" + exemptExpr("a", mHostNetAlways) + "))"

	v := func(name, expr string) admissionv1.Variable {
		return admissionv1.Variable{Name: name, Expression: expr}
	}
	present := "variables.inits.exists(c, c.name == n) || " + celContainers + ".exists(c, c.name == n)"
	vars := []admissionv1.Variable{
		v("annotations", celAnnotations),
		v("status", "variables.annotations[?"+celStatusKey+`].orValue("")`),
		v("inits", celInits),
		// Per sidecar name: {"kind": [...], "image": [exact, or prefix*]}.
		v("sidecars", mSidecars),
		v("owners", mOwners),
		// The sidecars graft.dev/status says graft injected.
		v("claims", strings.ReplaceAll(celClaims, "rec", "variables.status")),
		v("claimed", mNames+`.filter(n, variables.claims.contains("\"" + n + "\""))`),
		v("nsRevision", "namespaceObject.metadata.?labels[?"+celRevisionLabel+`].orValue("")`),
		v("revision", mPodRevision+" ? object.metadata.?labels[?"+celRevisionLabel+"].orValue(variables.nsRevision) : variables.nsRevision"),
		v("knownRevision", "variables.nsRevision in "+mKnownRevisions),
		v("exempt", exemptExpr("variables.annotations", mHostNetSkipped+"[?variables.revision].orValue(true)")),
		v("selected", celTemplatesKey+" in variables.annotations ? variables.annotations["+celTemplatesKey+
			`].split(",").map(s, s.trim()).filter(s, s != "") : `+mTemplates),
		// What the record claims, against the Pod.
		v("removed", "variables.claimed.filter(n, !("+present+"))"),
		v("wrong", "variables.inits.filter(c, c.name in variables.claimed && !"+sidecarOKExpr(celInitKind)+") +\n"+
			celContainers+".filter(c, c.name in variables.claimed && !"+sidecarOKExpr(`"container"`)+")"),
		// Containers under the names of the Pod's templates that the
		// record does not claim: graft did not inject them.
		v("unclaimed", mKeep+"[?variables.revision].orValue(false) ? [] :\n"+
			"(variables.inits + "+celContainers+").filter(c, c.name in variables.owners && "+
			"variables.owners[c.name] in variables.selected && !(c.name in variables.claimed))"),
		v("wrongWhy", wrongWhyExpr()),
		v("problem", problemExpr()),
	}
	return []admissionv1.MatchCondition{{Name: "not-verified", Expression: fast}}, vars,
		[]admissionv1.Validation{{Expression: `variables.problem == ""`, MessageExpression: "variables.problem", Reason: ptr(metav1.StatusReasonForbidden)}}
}

// wrongWhyExpr says why variables.wrong[0], a container the record
// claims, is not the sidecar graft injects under its name.
func wrongWhyExpr() string {
	q := strconv.Quote
	w := "variables.wrong[0]"
	s := "variables.sidecars[" + w + ".name]"
	isInit := "variables.inits.exists(i, i.name == " + w + ".name)"
	return "size(variables.wrong) == 0 ? \"\" :\n" +
		isInit + " && !((" + w + `.?restartPolicy.orValue("") == "Always" ? "native" : "init") in ` + s + ".kind) ? " +
		q("graft injects it as ") + " + " + s + `.kind.join(" or ") + ` + q(" (native: an init container with restartPolicy: Always)") + " :\n" +
		"!" + isInit + ` && !("container" in ` + s + ".kind) ? " + q("graft injects it as an init container") + " :\n" +
		q("its image ") + " + " + w + `.?image.orValue("") + ` + q(" is not one profile "+mProfile+" injects (") + " + " +
		s + `.image.join(", ") + ")"`
}

// problemExpr is "" for a Pod the guarantee admits, else the refusal's
// message: the first rule broken.
func problemExpr() string {
	q := strconv.Quote
	kindWord := func(c string) string {
		return "(variables.inits.exists(i, i.name == " + c + `.name) ? "init container " : "container ")`
	}
	fresh := " Remove graft.dev/status and the label graft.dev/injected from the Pod's manifest (they were copied from " +
		"another Pod or written by hand) and create it again: graft injects its own."
	u := "variables.unclaimed[0]"
	return "variables.exempt ? \"\" :\n" +
		"!variables.knownRevision ? \"namespace \" + request.namespace + \" is labelled " + names.Revision + "=\" + variables.nsRevision + " +
		q(", which is neither a revision nor a tag graft serves (revisions: "+mRevisions+"; tags: "+mTags+"), so no graft webhook was "+
			"called for this Pod: label the namespace with one of them (kubectl label namespace ") + " + request.namespace + " +
		q(" "+names.Revision+"=<revision or tag> --overwrite), or remove the label for the default revision.") + " :\n" +
		"variables.status == \"\" ? \"graft did not inject this Pod, and namespace \" + request.namespace + " +
		q(" requires it (label "+names.Inject+"="+mProfile+"). Check that graft is running (kubectl -n "+mGraftNamespace+
			" get pods) and create the Pod again, or opt the Pod out with the label "+names.Inject+`: "false".`) + " :\n" +
		"size(variables.removed) > 0 ? \"graft injected \" + variables.removed.map(n, " +
		`(variables.sidecars[n].kind[0] == "container" ? "container " : "init container ") + n).join(", ") + ` +
		q(" into this Pod (graft.dev/status records it), but the Pod leaving admission lacks it: a mutating admission step "+
			"after graft removed it. Check the other mutating webhooks and MutatingAdmissionPolicies that change Pods in this "+
			"namespace; the Pod is refused because it would run without graft's sidecars.") + " :\n" +
		"size(variables.wrong) > 0 ? " + kindWord("variables.wrong[0]") + " + variables.wrong[0].name + \" is not graft's: \" + " +
		"variables.wrongWhy + " + q(", yet graft.dev/status records it as graft's."+fresh) + " :\n" +
		"size(variables.unclaimed) > 0 ? \"the Pod has \" + " + kindWord(u) + " + " + u + ".name + " +
		"\", named like a sidecar template \" + variables.owners[" + u + ".name] + " +
		q(" injects, but graft.dev/status does not record it: graft did not inject it. Rename the container; profile "+mProfile+
			" refuses Pods holding graft's names (onConflict: keep would admit them).") + " :\n" +
		`""`
}

// celData is what fills in the skeleton for profile p.
func (in *guaranteeInput) celData(p *profileSpec) (map[string]string, error) {
	// Maps, not structs: JSON with sorted keys, as Helm's toJson writes it.
	table := map[string]map[string][]string{}
	owners := map[string]string{}
	kindsImages := []string{}
	prefixes := []string{}
	names := sortedKeys(p.sidecars)
	for _, n := range names {
		s := p.sidecars[n]
		table[n] = map[string][]string{"kind": s.Kinds, "image": s.Images}
		owners[n] = s.Template
		for _, k := range s.Kinds {
			for _, img := range s.Images {
				if pre, ok := strings.CutSuffix(img, "*"); ok {
					prefixes = append(prefixes, n+"|"+k+"|"+pre)
				} else {
					kindsImages = append(kindsImages, n+"|"+k+"|"+img)
				}
			}
		}
	}
	allSkip := true
	for _, skip := range p.hostNetworkSkipped {
		allSkip = allSkip && skip
	}
	tags := "none"
	if len(in.tags) > 0 {
		tags = strings.Join(in.tags, ", ")
	}
	known := append([]string{""}, in.revisions...)
	data := map[string]string{
		mProfile:        p.name,
		mGraftNamespace: in.graftNS,
		mRevisions:      strings.Join(in.revisions, ", "),
		mTags:           tags,
		mHostNetAlways:  strconv.FormatBool(allSkip),
		mPodRevision:    strconv.FormatBool(p.podRevision),
	}
	for marker, v := range map[string]any{
		mNames: names, mKindsImages: kindsImages, mImagePrefixes: prefixes, mSidecars: table, mOwners: owners,
		mTemplates: p.templates, mKnownRevisions: append(known, in.tags...), mHostNetSkipped: p.hostNetworkSkipped, mKeep: p.keep,
	} {
		js, err := celJSON(v)
		if err != nil {
			return nil, err
		}
		data[marker] = js
	}
	return data, nil
}

// fill replaces the skeleton's markers with data.
func fill(data map[string]string) (*admissionv1.ValidatingAdmissionPolicySpec, error) {
	var pairs []string
	for k, v := range data {
		pairs = append(pairs, k, v)
	}
	r := strings.NewReplacer(pairs...)
	conds, vars, vals := celSkeleton()
	spec := &admissionv1.ValidatingAdmissionPolicySpec{}
	check := func(s string) (string, error) {
		out := r.Replace(s)
		if i := strings.Index(out, "@@"); i >= 0 {
			return "", fmt.Errorf("guarantee: marker left unfilled at %q", out[i:min(len(out), i+40)])
		}
		return out, nil
	}
	var err error
	for _, c := range conds {
		if c.Expression, err = check(c.Expression); err != nil {
			return nil, err
		}
		spec.MatchConditions = append(spec.MatchConditions, c)
	}
	for _, v := range vars {
		if v.Expression, err = check(v.Expression); err != nil {
			return nil, err
		}
		spec.Variables = append(spec.Variables, v)
	}
	for _, v := range vals {
		if v.MessageExpression, err = check(v.MessageExpression); err != nil {
			return nil, err
		}
		spec.Validations = append(spec.Validations, v)
	}
	return spec, nil
}
