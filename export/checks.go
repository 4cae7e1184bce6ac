package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// What graft's guarantee policy compares of a template's render, for any
// profile (internal/registration assembles the policies; the Helm chart
// runs the same assembly), in two forms:
//
//   - Variants, for the policy's matchCondition: per variant of the
//     template (the values of the enum and bool parameters its structure
//     depends on), per container it adds, one CEL condition per compared
//     field that holds when a Pod's container has that field as the API
//     server stores graft's render of it, with markers where parameter
//     values go. The assembly fills them with a profile's values as CEL
//     literals, so the whole condition is constant data the API server
//     builds once (its planner folds constant lists and maps), and a Pod
//     graft injected without parameter annotations is checked by
//     comparisons alone.
//   - Runtime, for the validations: per container the map of the compared
//     fields graft renders, as CEL reading the parameters' values the
//     Pod's annotations give (@@P@@ and @@L@@, the policy's variables of
//     texts and list items), compared field by field to name the first
//     that differs.
//
// Markers in Expr: @@v:NAME@@ (inside a string literal: the parameter's
// text, escaped for the literal), @@n:NAME@@ (a bool's negation, as
// text), @@t:NAME@@ and @@tn:NAME@@ (a whole int or bool value, and a
// bool's negation), @@r:K@@ (inside a string literal: the variant's range
// K, expanded over a list parameter's items).

// Compared fields of a container, in the order a refusal names the first
// that differs (GUARANTEE-SPEC: "When a container is graft's"), and
// restartPolicyRules, which the specification names in neither list: what
// restarts a container under graft's name is graft's to say. The others
// (resources, resizePolicy, imagePullPolicy, terminationMessagePath and
// Policy, stdin, stdinOnce, tty) are not compared.
var comparedFields = []string{"image", "command", "args", "workingDir", "env", "envFrom", "ports", "volumeMounts",
	"volumeDevices", "securityContext", "restartPolicy", "restartPolicyRules", "startupProbe", "readinessProbe", "livenessProbe", "lifecycle"}

// ComparedFields lists the fields the guarantee compares, in order.
func ComparedFields() []string { return slices.Clone(comparedFields) }

// TemplateCheck is what the guarantee compares of one template.
type TemplateCheck struct {
	// Refused says why export's compiler cannot express the template: the
	// checks are then those every render shares (fallbackChecks), and
	// the container's image is checked by the facts' rules (Facts).
	Refused string `json:"refused,omitempty"`
	// Containers names every container the template can add, with facts
	// for the image rules of a refused template.
	Containers map[string]*ContainerFacts `json:"containers"`
	// ImageDefaults are the defaults of its image parameters.
	ImageDefaults map[string]string `json:"imageDefaults,omitempty"`
	Params        []CheckParam      `json:"params"`
	Variants      []CheckVariant    `json:"variants"`
	Runtime       RuntimeCheck      `json:"runtime"`
}

// RuntimeCheck is the template's render as CEL over its parameters.
type RuntimeCheck struct {
	Containers  []RuntimeContainer `json:"containers"`
	Annotations []RuntimeKey       `json:"annotations,omitempty"`
	Labels      []RuntimeKey       `json:"labels,omitempty"`
}

// RuntimeContainer is one container the template may add.
type RuntimeContainer struct {
	Name string `json:"name"`
	// Init: an init container (native sidecar or not), else a container.
	Init bool `json:"init,omitempty"`
	// When is CEL holding for the parameters that render it.
	When string `json:"when"`
	// Expected is a CEL map of the compared fields graft renders
	// (API-server defaults applied).
	Expected string `json:"expected"`
	// Fields are the fields to compare with Expected, in order; Image:
	// compare the image by the profile's image rule instead (a template
	// export cannot compile).
	Fields  []string        `json:"fields"`
	Image   bool            `json:"image,omitempty"`
	Volumes []RuntimeVolume `json:"volumes,omitempty"`
}

// RuntimeVolume is a volume the container mounts: Check is CEL on the
// Pod's volume bound to v, for the parameters When holds for.
type RuntimeVolume struct {
	Name  string `json:"name"`
	When  string `json:"when"`
	Check string `json:"check"`
}

// RuntimeKey is an annotation or label in graft's domains the template
// sets for the parameters When holds for: Value is its CEL string, ""
// when any value is graft's (a refused template's varying key).
type RuntimeKey struct {
	Key   string `json:"key"`
	When  string `json:"when"`
	Value string `json:"value,omitempty"`
}

// CheckParam is one parameter: what a Pod's annotation may set.
type CheckParam struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Default string `json:"default"`
	// Rule is a CEL string, "" when @@VALUE@@ (a CEL string) is a valid
	// value, else the rule it breaks in the engine's words.
	Rule string `json:"rule"`
	// Text is a CEL string: the text a valid @@VALUE@@ renders to.
	Text string `json:"text"`
	// Values are an enum's values, and "false", "true" for a bool.
	Values []string `json:"values,omitempty"`
	// PodSecurity: the level some values need (templates.Param).
	PodSecurity map[string]string `json:"podSecurity,omitempty"`
	// Image: the value is a container's image (the profile's
	// allowedImages apply to it).
	Image bool `json:"image,omitempty"`
}

// CheckVariant is the template for one set of values of the parameters
// its structure depends on.
type CheckVariant struct {
	// When holds those values (bools as "true"/"false"); empty for a
	// template whose structure is fixed.
	When        map[string]string `json:"when,omitempty"`
	Containers  []CheckContainer  `json:"containers"`
	Annotations []CheckKey        `json:"annotations,omitempty"`
	Labels      []CheckKey        `json:"labels,omitempty"`
	Ranges      []CheckRange      `json:"ranges,omitempty"`
}

// CheckContainer is one container the variant adds.
type CheckContainer struct {
	Name string `json:"name"`
	// Kind is native (an init container with restartPolicy: Always), init
	// or container.
	Kind string `json:"kind"`
	// Size is the number of fields the API server stores for the
	// container, volumeMounts aside (see storedSize); -1 when unknown (a
	// refused template), whose Fields then require absent fields absent.
	Size   int          `json:"size"`
	Fields []CheckField `json:"fields"`
	// Volumes are the template's volumes the container mounts.
	Volumes []CheckField `json:"volumes,omitempty"`
	// Unchecked lists what a refused template's renders do not share,
	// which the guarantee therefore does not compare.
	Unchecked []string `json:"unchecked,omitempty"`
}

// CheckField is one condition: on the container bound to c (a field),
// or the volume bound to v (Field is then the volume's name).
type CheckField struct {
	Field string `json:"field"`
	Expr  string `json:"expr"`
}

// CheckKey is an annotation or label in graft's domains the variant
// sets: its value as CEL strings.
type CheckKey struct {
	Key  string `json:"key"`
	Expr string `json:"expr"`
}

// CheckRange is text repeated over a list parameter's items: first for
// the first item, rest (when set) for each later one.
type CheckRange struct {
	Param string       `json:"param"`
	First []RangePiece `json:"first"`
	Rest  []RangePiece `json:"rest,omitempty"`
}

// RangePiece is literal text, the current item, or a parameter's text.
type RangePiece struct {
	Lit   string `json:"lit,omitempty"`
	Item  bool   `json:"item,omitempty"`
	Param string `json:"param,omitempty"`
	Not   bool   `json:"not,omitempty"`
}

// Checks returns what the guarantee compares of tmpl. A template export's
// compiler refuses still gets checks (Refused says why they are fewer);
// an error is a template the guarantee cannot check at all.
func Checks(tmpl *templates.Template) (TemplateCheck, error) {
	facts, err := Facts(tmpl)
	if err != nil {
		return TemplateCheck{}, err
	}
	tc := TemplateCheck{Containers: facts.Containers, ImageDefaults: facts.ImageDefaults}
	for i := range tmpl.Params {
		tc.Params = append(tc.Params, checkParam(&tmpl.Params[i], facts))
	}
	compiled, err := compileTemplate(tmpl)
	if err == nil {
		err = compiled.checkVariants(&tc)
	}
	var refusal *Refusal
	if errors.As(err, &refusal) {
		tc.Refused = refusal.Error()
		tc.Variants, tc.Runtime, err = fallbackChecks(tmpl, facts)
	}
	if err != nil {
		return TemplateCheck{}, fmt.Errorf("template %s: %w", tmpl.Name, err)
	}
	return tc, nil
}

func checkParam(p *templates.Param, facts TemplateFacts) CheckParam {
	const v = "@@VALUE@@"
	cp := CheckParam{Name: p.Name, Type: string(p.Type), Default: p.Default, Rule: ruleExpr(p, v), Text: textExpr(p, v)}
	switch p.Type {
	case templates.TypeEnum:
		cp.Values = slices.Clone(p.Values)
	case templates.TypeBool:
		cp.Values = []string{"false", "true"}
	}
	if len(p.PodSecurity) > 0 {
		cp.PodSecurity = map[string]string{}
		for val, l := range p.PodSecurity {
			cp.PodSecurity[val] = string(l)
		}
	}
	for _, cf := range facts.Containers {
		cp.Image = cp.Image || slices.Contains(cf.ImageParams, p.Name)
	}
	return cp
}

// renderedContainer is one container of one variant as the API server stores it.
type renderedContainer struct {
	fixed  map[string]any // the variant's values
	name   string
	init   bool
	h      *holes
	stored map[string]any
	vols   []renderedVolume
	// size: see CheckContainer.Size.
	size int
}

type renderedVolume struct {
	name   string
	h      *holes
	stored any
}

// checkVariants fills tc's variants and runtime checks from the compiled
// template.
func (c *template) checkVariants(tc *TemplateCheck) error {
	refuse := func(err error) error { return &Refusal{Template: c.tmpl.Name, File: c.tmpl.File, Reason: err.Error()} }
	var all []renderedContainer
	keys := map[bool][]runtimeKeyOcc{} // label? -> occurrences
	for i := range c.variants {
		v := &c.variants[i]
		cv := CheckVariant{}
		if len(v.fixed) > 0 {
			cv.When = map[string]string{}
			for k, x := range v.fixed {
				cv.When[k] = fmt.Sprint(x)
			}
		}
		e := &emitter{}
		vols := map[string]node{}
		for _, el := range v.frag.lists[listVolumes] {
			vols[el.name] = el.val
		}
		for _, l := range []struct {
			kind listKind
			init bool
		}{{listInits, true}, {listContainers, false}} {
			for _, el := range v.frag.lists[l.kind] {
				r, err := renderContainer(el, l.init, vols)
				if err != nil {
					return refuse(err)
				}
				r.fixed = v.fixed
				cc, err := e.fastContainer(r)
				if err != nil {
					return refuse(err)
				}
				cv.Containers = append(cv.Containers, cc)
				all = append(all, r)
			}
		}
		for _, kv := range []struct {
			entries []entry
			out     *[]CheckKey
			label   bool
		}{{v.frag.annotations, &cv.Annotations, false}, {v.frag.labels, &cv.Labels, true}} {
			for _, en := range kv.entries {
				if !names.Reserved(en.key) {
					continue
				}
				h := &holes{}
				val := h.encode(en.val, "")
				expr, err := e.literal(h, val, false)
				if err != nil {
					return refuse(err)
				}
				rt, _ := e.literal(h, val, true)
				*kv.out = append(*kv.out, CheckKey{Key: en.key, Expr: expr})
				keys[kv.label] = append(keys[kv.label], runtimeKeyOcc{key: en.key, fixed: v.fixed, value: rt})
			}
		}
		cv.Ranges = e.ranges
		tc.Variants = append(tc.Variants, cv)
	}
	var err error
	if tc.Runtime.Containers, err = runtimeContainers(all, c.branch); err != nil {
		return refuse(err)
	}
	tc.Runtime.Annotations = runtimeKeys(keys[false], c.branch)
	tc.Runtime.Labels = runtimeKeys(keys[true], c.branch)
	return nil
}

// emitter writes conditions for one variant; ranges collects the ranges
// its markers number.
type emitter struct {
	ranges []CheckRange
	seen   map[*rangePiece]int
}

// whenOf is CEL over @@P@@ holding for the parameter values of set (the
// fixed values of variants): the smallest such condition this finds,
// leaving out every parameter whose values set takes all of alike.
func whenOf(set []map[string]any, branch []*templates.Param) string {
	key := func(m map[string]any, ps []*templates.Param) string {
		var b strings.Builder
		for _, p := range ps {
			fmt.Fprintf(&b, "%s=%v;", p.Name, m[p.Name])
		}
		return b.String()
	}
	params := slices.Clone(branch)
	combos := slices.Clone(set)
	for changed := true; changed; {
		changed = false
		for i, p := range params {
			in := map[string]bool{}
			for _, c := range combos {
				in[key(c, params)] = true
			}
			closed := true
			for _, c := range combos {
				for _, x := range domain(p) {
					d := maps.Clone(c)
					d[p.Name] = x
					closed = closed && in[key(d, params)]
				}
			}
			if !closed {
				continue
			}
			params = slices.Delete(slices.Clone(params), i, i+1)
			seen := map[string]bool{}
			var kept []map[string]any
			for _, c := range combos {
				if k := key(c, params); !seen[k] {
					seen[k] = true
					kept = append(kept, c)
				}
			}
			combos, changed = kept, true
			break
		}
	}
	if len(params) == 0 {
		return "true"
	}
	var alt []string
	for _, c := range combos {
		var and []string
		for _, p := range params {
			and = append(and, `@@P@@[`+celString(p.Name)+`] == `+celString(fmt.Sprint(c[p.Name])))
		}
		alt = append(alt, strings.Join(and, " && "))
	}
	slices.Sort(alt)
	if len(alt) == 1 {
		return "(" + alt[0] + ")"
	}
	return "(" + strings.Join(alt, " || ") + ")"
}

// renderContainer reads a compiled container element as the API server
// stores it: only what is compared goes through the API types (a
// resource quantity built from a parameter, say, would not parse as one),
// defaulted as kube-apiserver defaults it.
func renderContainer(el element, init bool, vols map[string]node) (renderedContainer, error) {
	h := &holes{}
	full, _ := el.val.(object)
	kept := object{vals: map[string]node{}}
	for _, k := range full.keys {
		if k == "name" || slices.Contains(comparedFields, k) {
			kept.keys = append(kept.keys, k)
			kept.vals[k] = full.vals[k]
		}
	}
	var c corev1.Container
	if err := h.roundTrip(h.encode(kept, ""), &c); err != nil {
		return renderedContainer{}, fmt.Errorf("container %s: %w", el.name, err)
	}
	defaultContainer(&c)
	stored, err := h.decodeTyped(&c)
	if err != nil {
		return renderedContainer{}, fmt.Errorf("container %s: %w", el.name, err)
	}
	r := renderedContainer{name: el.name, init: init, h: h, stored: stored.(map[string]any)}
	if r.size, err = storedSize(full); err != nil {
		return renderedContainer{}, fmt.Errorf("container %s: %w", el.name, err)
	}
	for _, vm := range c.VolumeMounts {
		vn, ok := vols[vm.Name]
		if !ok || slices.ContainsFunc(r.vols, func(v renderedVolume) bool { return v.name == vm.Name }) {
			continue // the Pod's own volume (an app's), or mounted twice
		}
		vh := &holes{}
		var v corev1.Volume
		if err := vh.roundTrip(vh.encode(vn, ""), &v); err != nil {
			return renderedContainer{}, fmt.Errorf("volume %s: %w", vm.Name, err)
		}
		defaultVolume(&v)
		vs, err := vh.decodeTyped(&v)
		if err != nil {
			return renderedContainer{}, fmt.Errorf("volume %s: %w", vm.Name, err)
		}
		r.vols = append(r.vols, renderedVolume{name: vm.Name, h: vh, stored: vs})
	}
	return r, nil
}

// storedSize counts the fields the API server stores for a rendered
// container, volumeMounts aside: the compared ones and those it does not
// compare (resources, and imagePullPolicy and terminationMessagePath and
// Policy, which it defaults). With it the matchCondition needs no
// condition per absent field: one count says no other field is there.
func storedSize(full object) (int, error) {
	// Every parameter's value as some valid value of its field: a
	// resource quantity as 1, a number as 1, text as text.
	var fill func(n node, quantity bool) any
	fill = func(n node, quantity bool) any {
		switch n := n.(type) {
		case object:
			m := make(map[string]any, len(n.keys))
			for _, k := range n.keys {
				m[k] = fill(n.vals[k], quantity || k == "resources" || quantityKeys[k])
			}
			return m
		case array:
			out := make([]any, len(n))
			for i, x := range n {
				out[i] = fill(x, quantity)
			}
			return out
		case str:
			if quantity {
				return "1"
			}
			return "x"
		case typed:
			if n.src.param.Type == templates.TypeBool {
				return true
			}
			return json.Number("1")
		}
		return n
	}
	b, err := json.Marshal(fill(full, false))
	if err != nil {
		return 0, err
	}
	var c corev1.Container
	if err := json.Unmarshal(b, &c); err != nil {
		return 0, fmt.Errorf("not as the API server reads it: %w", err)
	}
	defaultContainer(&c)
	c.ImagePullPolicy = cmpOr(c.ImagePullPolicy, corev1.PullIfNotPresent)
	c.TerminationMessagePath = cmpOr(c.TerminationMessagePath, corev1.TerminationMessagePathDefault)
	c.TerminationMessagePolicy = cmpOr(c.TerminationMessagePolicy, corev1.TerminationMessageReadFile)
	c.VolumeMounts = nil
	m, err := jsonOf(&c)
	if err != nil {
		return 0, err
	}
	return len(m), nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// fastContainer writes the matchCondition's conditions on one container.
func (e *emitter) fastContainer(r renderedContainer) (CheckContainer, error) {
	cc := CheckContainer{Name: r.name, Kind: kindContainer, Size: r.size}
	if r.init {
		cc.Kind = kindInit
		if r.stored["restartPolicy"] == string(corev1.ContainerRestartPolicyAlways) {
			cc.Kind = kindNative
		}
	}
	for _, f := range comparedFields {
		if r.stored[f] == nil && f != "volumeMounts" {
			continue // absent: the size says so
		}
		expr, err := e.field(r.h, "c", f, r.stored[f])
		if err != nil {
			return CheckContainer{}, fmt.Errorf("container %s: %s: %w", r.name, f, err)
		}
		cc.Fields = append(cc.Fields, CheckField{Field: f, Expr: expr})
	}
	for _, v := range r.vols {
		expr, err := e.eq(v.h, "v", v.stored, false)
		if err != nil {
			return CheckContainer{}, fmt.Errorf("volume %s: %w", v.name, err)
		}
		cc.Volumes = append(cc.Volumes, CheckField{Field: v.name, Expr: expr})
	}
	return cc, nil
}

// runtimeContainers merges the variants' renders of each container into
// one CEL map per container, a field that differs between variants
// chosen by their values.
func runtimeContainers(all []renderedContainer, branch []*templates.Param) ([]RuntimeContainer, error) {
	var order []string
	byName := map[string][]renderedContainer{}
	for _, r := range all {
		if _, ok := byName[r.name]; !ok {
			order = append(order, r.name)
		}
		byName[r.name] = append(byName[r.name], r)
	}
	e := &emitter{}
	var out []RuntimeContainer
	for _, n := range order {
		rs := byName[n]
		rc := RuntimeContainer{Name: n, Init: rs[0].init, Fields: slices.Clone(comparedFields)}
		var whens []map[string]any
		for _, r := range rs {
			if r.init != rc.Init {
				return nil, fmt.Errorf("container %s is an init container for some values and a container for others", n)
			}
			whens = append(whens, r.fixed)
		}
		rc.When = whenOf(whens, branch)
		var entries []string
		for _, f := range comparedFields {
			// Group the variants by the field's value.
			var vals []string
			byVal := map[string][]map[string]any{}
			for _, r := range rs {
				lit := ""
				if v, ok := r.stored[f]; ok && v != nil {
					var err error
					if lit, err = e.literal(r.h, v, true); err != nil {
						return nil, fmt.Errorf("container %s: %s: %w", n, f, err)
					}
				}
				if _, seen := byVal[lit]; !seen {
					vals = append(vals, lit)
				}
				byVal[lit] = append(byVal[lit], r.fixed)
			}
			switch {
			case len(vals) == 1 && vals[0] == "":
			case len(vals) == 1:
				entries = append(entries, celString(f)+": dyn("+vals[0]+")")
			default:
				var alt []string
				for _, v := range vals {
					opt := "optional.none()"
					if v != "" {
						opt = "optional.of(dyn(" + v + "))"
					}
					alt = append(alt, whenOf(byVal[v], branch)+" ? "+opt)
				}
				entries = append(entries, "?"+celString(f)+": ("+strings.Join(alt, " : ")+" : optional.none())")
			}
		}
		rc.Expected = "{" + strings.Join(entries, ",\n ") + "}"
		vols := map[string]map[string][]map[string]any{} // volume -> check -> variants' values
		var volOrder []string
		for _, r := range rs {
			for _, v := range r.vols {
				chk, err := e.eq(v.h, "v", v.stored, true)
				if err != nil {
					return nil, fmt.Errorf("volume %s: %w", v.name, err)
				}
				if vols[v.name] == nil {
					vols[v.name] = map[string][]map[string]any{}
					volOrder = append(volOrder, v.name)
				}
				vols[v.name][chk] = append(vols[v.name][chk], r.fixed)
			}
		}
		for _, vn := range volOrder {
			for _, chk := range slices.Sorted(maps.Keys(vols[vn])) {
				rc.Volumes = append(rc.Volumes, RuntimeVolume{Name: vn, When: whenOf(vols[vn][chk], branch), Check: chk})
			}
		}
		out = append(out, rc)
	}
	return out, nil
}

type runtimeKeyOcc struct {
	key, value string
	fixed      map[string]any
}

// runtimeKeys merges the variants' keys.
func runtimeKeys(occ []runtimeKeyOcc, branch []*templates.Param) []RuntimeKey {
	type kv struct{ key, value string }
	whens := map[kv][]map[string]any{}
	var order []kv
	for _, o := range occ {
		k := kv{o.key, o.value}
		if _, ok := whens[k]; !ok {
			order = append(order, k)
		}
		whens[k] = append(whens[k], o.fixed)
	}
	var out []RuntimeKey
	for _, k := range order {
		out = append(out, RuntimeKey{Key: k.key, When: whenOf(whens[k], branch), Value: k.value})
	}
	return out
}

// The ServiceAccount admission plugin's token mount, the one difference
// in volumeMounts the guarantee allows (see saMount).
const (
	saVolumePrefix = "kube-api-access-"
	saMountPath    = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// saMount is CEL that holds when mount m (a CEL expression) is the
// plugin's: {name: kube-api-access-*, readOnly: true, mountPath: the
// token path}, nothing else. That the volume it names is the plugin's
// projected token volume, not a Pod's own under that name (a hostPath,
// say), which the plugin would mount into graft's container just the
// same, the assembly checks once per Pod.
func saMount(m string) string {
	return m + `.name.startsWith("` + saVolumePrefix + `") && size(` + m + `) == 3 && ` + m + `.?readOnly.orValue(false) && ` +
		m + `.mountPath == "` + saMountPath + `"`
}

// field writes the matchCondition's condition on field f of the
// container bound to acc.
func (e *emitter) field(h *holes, acc, f string, v any) (string, error) {
	path := acc + "." + f
	switch {
	case f == "volumeMounts":
		// graft's mounts, and maybe after them the token mount.
		list, _ := v.([]any)
		n := len(list)
		sa := saMount(path + "[" + strconv.Itoa(n) + "]")
		if n == 0 {
			return "(!has(" + path + ") || size(" + path + ") == 1 && " + sa + ")", nil
		}
		whole, err := e.eq(h, path, v, false)
		if err != nil {
			return "", err
		}
		var each []string
		for i, m := range list {
			c, err := e.eq(h, path+"["+strconv.Itoa(i)+"]", m, false)
			if err != nil {
				return "", err
			}
			each = append(each, c)
		}
		return "has(" + path + ") && (size(" + path + ") == " + strconv.Itoa(n+1) + " ? " +
			strings.Join(each, " && ") + " && " + sa + " : " + whole + ")", nil
	case v == nil:
		return "!has(" + path + ")", nil
	}
	eq, err := e.eq(h, path, v, false)
	if err != nil {
		return "", err
	}
	return "has(" + path + ") && " + eq, nil
}

// eq writes the condition that the value at acc equals v: one comparison
// with a literal, or for a value holding a quantity built from a
// parameter, which the API server stores in canonical form, its parts.
func (e *emitter) eq(h *holes, acc string, v any, runtime bool) (string, error) {
	if !h.hasQuantity(v) {
		lit, err := e.literal(h, v, runtime)
		if err != nil {
			return "", err
		}
		// The literal first: its Equal walks its own keys, cheaper than the
		// typed object's walking every field of its type.
		return lit + " == " + acc, nil
	}
	switch v := v.(type) {
	case map[string]any:
		parts := []string{"size(" + acc + ") == " + strconv.Itoa(len(v))}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			sub, err := e.eq(h, acc+"["+celString(k)+"]", v[k], runtime)
			if err != nil {
				return "", err
			}
			parts = append(parts, celString(k)+" in "+acc+" && "+sub)
		}
		return "(" + strings.Join(parts, " && ") + ")", nil
	case []any:
		parts := []string{"size(" + acc + ") == " + strconv.Itoa(len(v))}
		for i, x := range v {
			sub, err := e.eq(h, acc+"["+strconv.Itoa(i)+"]", x, runtime)
			if err != nil {
				return "", err
			}
			parts = append(parts, sub)
		}
		return "(" + strings.Join(parts, " && ") + ")", nil
	case string:
		lit, err := e.literal(h, v, runtime)
		if err != nil {
			return "", err
		}
		return "quantity(" + acc + ").compareTo(quantity(" + lit + ")) == 0", nil
	}
	return "", fmt.Errorf("internal: a quantity in %T", v)
}

// literal writes v as a CEL value: maps and lists of plain values, each
// map value dyn() (a CEL map literal's values must otherwise share one
// type); strings built from parameters with markers (or, at runtime,
// the concatenation reading them).
func (e *emitter) literal(h *holes, v any, runtime bool) (string, error) {
	var b strings.Builder
	if err := e.write(&b, h, v, runtime); err != nil {
		return "", err
	}
	return b.String(), nil
}

func (e *emitter) write(b *strings.Builder, h *holes, v any, runtime bool) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		if i, ok := h.typedHole(v); ok {
			b.WriteString(typedCEL(h.typed[i], runtime))
			return nil
		}
		b.WriteString(v.String())
	case string:
		s, ok, err := h.strHole(v)
		if err != nil {
			return err
		}
		if !ok {
			if strings.Contains(v, "@@") {
				return errors.New("a value holds @@, which the guarantee uses as a marker")
			}
			b.WriteString(celString(v))
			return nil
		}
		if runtime {
			b.WriteString(s.cel(runtimeNames{}, ""))
			return nil
		}
		lit, err := e.strSkeleton(s)
		if err != nil {
			return err
		}
		b.WriteString(lit)
	case map[string]any:
		b.WriteString("{")
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(celString(k) + ": dyn(")
			if err := e.write(b, h, v[k], runtime); err != nil {
				return err
			}
			b.WriteString(")")
		}
		b.WriteString("}")
	case []any:
		kinds := map[string]bool{}
		for _, x := range v {
			kinds[valueKind(h, x)] = true
		}
		mixed := len(kinds) > 1
		b.WriteString("[")
		for i, x := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			if mixed {
				b.WriteString("dyn(")
			}
			if err := e.write(b, h, x, runtime); err != nil {
				return err
			}
			if mixed {
				b.WriteString(")")
			}
		}
		b.WriteString("]")
	default:
		return fmt.Errorf("internal: %T in a container", v)
	}
	return nil
}

// valueKind is a value's CEL type, for list literals, which must be
// homogeneous.
func valueKind(h *holes, v any) string {
	switch v := v.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case json.Number:
		if i, ok := h.typedHole(v); ok {
			if h.typed[i].src.param.Type == templates.TypeBool {
				return "bool"
			}
			return "int"
		}
		if strings.ContainsAny(v.String(), ".eE") {
			return "double"
		}
		return "int"
	case map[string]any:
		return "map"
	case []any:
		return "list"
	}
	return "null"
}

// typedCEL is a whole int or bool value from a parameter.
func typedCEL(t typed, runtime bool) string {
	isBool := t.src.param.Type == templates.TypeBool
	if !runtime {
		if t.src.not {
			return "@@tn:" + t.src.param.Name + "@@"
		}
		return "@@t:" + t.src.param.Name + "@@"
	}
	text := runtimeNames{}.text(t.src)
	if isBool {
		return "(" + text + ` == "true")`
	}
	return "int(" + text + ")"
}

// strSkeleton writes a string built from parameters as one CEL string
// literal with markers.
func (e *emitter) strSkeleton(s str) (string, error) {
	var b strings.Builder
	b.WriteString(`"`)
	for _, p := range s {
		switch {
		case p.param:
			if p.src.not {
				b.WriteString("@@n:" + p.src.param.Name + "@@")
			} else {
				b.WriteString("@@v:" + p.src.param.Name + "@@")
			}
		case p.rng != nil:
			k, err := e.rangeIndex(p.rng)
			if err != nil {
				return "", err
			}
			b.WriteString("@@r:" + strconv.Itoa(k) + "@@")
		case p.item:
			return "", errors.New("internal: a range item outside its range")
		default:
			if strings.Contains(p.lit, "@@") {
				return "", errors.New("a value holds @@, which the guarantee uses as a marker")
			}
			q := celString(p.lit)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	b.WriteString(`"`)
	return b.String(), nil
}

func (e *emitter) rangeIndex(r *rangePiece) (int, error) {
	if k, ok := e.seen[r]; ok {
		return k, nil
	}
	pieces := func(s str) ([]RangePiece, error) {
		var out []RangePiece
		for _, p := range s {
			switch {
			case p.item:
				out = append(out, RangePiece{Item: true})
			case p.param:
				out = append(out, RangePiece{Param: p.src.param.Name, Not: p.src.not})
			case p.rng != nil:
				return nil, errors.New("internal: a range within a range")
			default:
				out = append(out, RangePiece{Lit: p.lit})
			}
		}
		return out, nil
	}
	cr := CheckRange{Param: r.list.Name}
	var err error
	if cr.First, err = pieces(r.first); err != nil {
		return 0, err
	}
	if r.rest != nil {
		if cr.Rest, err = pieces(r.rest); err != nil {
			return 0, err
		}
	}
	if e.seen == nil {
		e.seen = map[*rangePiece]int{}
	}
	e.seen[r] = len(e.ranges)
	e.ranges = append(e.ranges, cr)
	return len(e.ranges) - 1, nil
}

// runtimeNames reads parameters from the policy's variables, written as
// placeholders the assembly replaces: @@P@@ the template's texts by
// parameter, @@L@@ its list parameters' items.
type runtimeNames struct{}

func (runtimeNames) text(src holeSrc) string {
	t := `@@P@@[` + celString(src.param.Name) + `]`
	if src.not {
		return "(" + t + ` == "true" ? "false" : "true")`
	}
	return t
}

func (runtimeNames) list(p *templates.Param) string { return `@@L@@[` + celString(p.Name) + `]` }

// holes keeps a compiled value's strings built from parameters and its
// typed parameter values while the value goes through corev1's types: a
// string becomes a token, a typed value a sentinel number, a string in a
// quantity field a sentinel quantity, each found again afterwards.
type holes struct {
	strs  []str
	quant []bool
	typed []typed
}

const (
	tokenPrefix    = "GRAFTT"
	typedSentinel  = 1800000000
	quantSentinel  = 1900000001
	maxHolesPerDoc = 900
)

var tokenRE = regexp.MustCompile(`^` + tokenPrefix + `([0-9]+)Q$`)

// quantityKeys are the keys of quantity fields among what the guarantee
// compares: a downward API divisor, an emptyDir's size limit.
var quantityKeys = map[string]bool{"divisor": true, "sizeLimit": true}

func (h *holes) encode(n node, key string) any {
	switch n := n.(type) {
	case object:
		m := make(map[string]any, len(n.keys))
		for _, k := range n.keys {
			m[k] = h.encode(n.vals[k], k)
		}
		return m
	case array:
		out := make([]any, len(n))
		for i, x := range n {
			out[i] = h.encode(x, "")
		}
		return out
	case str:
		i := len(h.strs)
		h.strs = append(h.strs, n)
		h.quant = append(h.quant, quantityKeys[key])
		if quantityKeys[key] {
			return strconv.Itoa(quantSentinel + i)
		}
		return tokenPrefix + strconv.Itoa(i) + "Q"
	case typed:
		i := len(h.typed)
		h.typed = append(h.typed, n)
		return json.Number(strconv.Itoa(typedSentinel + i))
	}
	return n
}

// roundTrip reads raw into out as the API server decodes it.
func (h *holes) roundTrip(raw any, out any) error {
	if len(h.strs) > maxHolesPerDoc || len(h.typed) > maxHolesPerDoc {
		return errors.New("too many parameters in one object")
	}
	for _, t := range h.typed {
		if t.src.param.Type == templates.TypeBool {
			return fmt.Errorf("parameter %s is a whole true/false value here; the guarantee compares only text parameters' values and numbers", t.src.param.Name)
		}
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("not as the API server reads it: %w", err)
	}
	return nil
}

// decodeTyped writes a typed object back as JSON values, exact numbers
// kept.
func (h *holes) decodeTyped(obj any) (any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, h.check(v)
}

// check: every hole came back whole.
func (h *holes) check(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			if err := h.check(x); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := h.check(x); err != nil {
				return err
			}
		}
	case string:
		if _, _, err := h.strHole(v); err != nil {
			return err
		}
	}
	return nil
}

func (h *holes) strHole(s string) (str, bool, error) {
	if m := tokenRE.FindStringSubmatch(s); m != nil {
		i, _ := strconv.Atoi(m[1])
		if i < len(h.strs) {
			return h.strs[i], true, nil
		}
	}
	if strings.Contains(s, tokenPrefix) {
		return nil, false, errors.New("a parameter's text moved within a value the API server rewrites")
	}
	if i, err := strconv.Atoi(s); err == nil && i >= quantSentinel && i < quantSentinel+len(h.strs) && h.quant[i-quantSentinel] {
		return h.strs[i-quantSentinel], true, nil
	}
	return nil, false, nil
}

func (h *holes) typedHole(n json.Number) (int, bool) {
	i, err := strconv.Atoi(n.String())
	if err != nil || i < typedSentinel || i >= typedSentinel+len(h.typed) {
		return 0, false
	}
	return i - typedSentinel, true
}

// hasQuantity: v holds a quantity built from a parameter.
func (h *holes) hasQuantity(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			if h.hasQuantity(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if h.hasQuantity(x) {
				return true
			}
		}
	case string:
		if i, err := strconv.Atoi(v); err == nil && i >= quantSentinel && i < quantSentinel+len(h.strs) {
			return h.quant[i-quantSentinel]
		}
	}
	return false
}
