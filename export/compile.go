package export

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/template/parse"

	"github.com/graftdev/graft/templates"
)

// maxVariants bounds the combinations of enum and bool parameters a
// template's control flow may depend on.
const maxVariants = 64

// compiler compiles one template.
type compiler struct {
	src  *source
	tmpl *templates.Template
	tree *parse.Tree
}

// template is a compiled template: for each combination of the
// parameters its control flow reads (its variants), what it adds.
type template struct {
	tmpl     *templates.Template
	branch   []*templates.Param
	variants []variant
}

type variant struct {
	// fixed holds the branch parameters' values: string (enum) or bool.
	fixed map[string]any
	// node is the compiled fragment, frag its lists and maps.
	node node
	frag fragment
}

// variantFor returns the variant the raw parameter values select.
func (c *template) variantFor(vals rawValues) *variant {
	for i := range c.variants {
		v := &c.variants[i]
		match := true
		for k, x := range v.fixed {
			match = match && fmt.Sprint(x) == vals[k]
		}
		if match {
			return v
		}
	}
	return nil
}

// fragment is a rendered template in compiled form.
type fragment struct {
	lists       [numLists][]element
	annotations []entry
	labels      []entry
}

// The lists a fragment adds to, in the order the engine claims names.
type listKind int

const (
	listContainers listKind = iota
	listInits
	listVolumes
	listSecrets
	listEnv
	listMounts
	numLists
)

type element struct {
	name string
	// mountPath is set for app volume mounts, which match by it too.
	mountPath node
	val       node
}

type entry struct {
	key string
	val node
}

func (t *compiler) refuse(format string, args ...any) *Refusal {
	return &Refusal{Template: t.src.name, File: t.src.file, Reason: fmt.Sprintf(format, args...)}
}

func (t *compiler) paramIndex(p *templates.Param) int {
	for i := range t.tmpl.Params {
		if &t.tmpl.Params[i] == p {
			return i
		}
	}
	return -1
}

// compileTemplate compiles tmpl or says why it cannot.
func compileTemplate(tmpl *templates.Template) (*template, error) {
	t := &compiler{src: &source{name: tmpl.Name, file: tmpl.File, text: tmpl.Fragment}, tmpl: tmpl}
	if strings.Contains(tmpl.Fragment, markerPrefix) {
		return nil, t.refuse("the fragment contains %s, which export uses as a marker", markerPrefix)
	}
	trees, err := parse.Parse(tmpl.Name, tmpl.Fragment, "{{", "}}", parseFuncs())
	if err != nil {
		return nil, t.refuse("fragment: %s", err)
	}
	if len(trees) != 1 || trees[tmpl.Name] == nil {
		return nil, t.refuse("{{ define }} is not supported")
	}
	t.tree = trees[tmpl.Name]
	var branch []*templates.Param
	for {
		out, err := t.compileVariants(branch)
		var need *needConcrete
		if !asNeed(err, &need) {
			return out, err
		}
		if slices.Contains(branch, need.param) {
			return nil, t.refuse("internal: parameter %s asked for twice", need.param.Name)
		}
		branch = append(branch, need.param)
		if n := combinations(branch); n > maxVariants {
			return nil, t.refuse("control flow over %d combinations of parameters %s; at most %d compile",
				n, paramNames(branch), maxVariants)
		}
	}
}

func asNeed(err error, need **needConcrete) bool {
	n, ok := err.(*needConcrete)
	if ok {
		*need = n
	}
	return ok
}

func domain(p *templates.Param) []any {
	if p.Type == templates.TypeBool {
		return []any{false, true}
	}
	out := make([]any, len(p.Values))
	for i, v := range p.Values {
		out[i] = v
	}
	return out
}

func combinations(ps []*templates.Param) int {
	n := 1
	for _, p := range ps {
		n *= len(domain(p))
	}
	return n
}

func paramNames(ps []*templates.Param) string {
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

// assignments lists every combination of values of ps.
func assignments(ps []*templates.Param) []map[string]any { return product(ps, domain) }

// product lists every map giving each parameter of ps one of its values.
func product[V any](ps []*templates.Param, values func(*templates.Param) []V) []map[string]V {
	out := []map[string]V{{}}
	for _, p := range ps {
		var next []map[string]V
		for _, a := range out {
			for _, v := range values(p) {
				b := maps.Clone(a)
				b[p.Name] = v
				next = append(next, b)
			}
		}
		out = next
	}
	return out
}

func (t *compiler) compileVariants(branch []*templates.Param) (*template, error) {
	out := &template{tmpl: t.tmpl, branch: branch}
	for _, fixed := range assignments(branch) {
		n, frag, err := t.compileVariant(fixed)
		if err != nil {
			return nil, err
		}
		out.variants = append(out.variants, variant{fixed: fixed, node: n, frag: frag})
	}
	return out, nil
}

func (t *compiler) evaluate(fixed map[string]any, sh shape) (rendering, error) {
	ev := &evaluator{src: t.src, tmpl: t.tmpl, fixed: fixed, shape: sh}
	if err := ev.walk(t.tree.Root, rootVal{}); err != nil {
		return rendering{}, err
	}
	return t.flatten(ev.out, ev.ranges), nil
}

// itemCounts are the item counts a check renders a list parameter with:
// none to three, within its bounds.
func itemCounts(p *templates.Param) []int {
	lo, hi := 0, 3
	if n, err := strconv.Atoi(p.Min); err == nil {
		lo = max(lo, n)
	}
	if n, err := strconv.Atoi(p.Max); err == nil {
		hi = min(hi, n)
	}
	var out []int
	for n := lo; n <= hi; n++ {
		out = append(out, n)
	}
	return out
}

func (t *compiler) compileVariant(fixed map[string]any) (node, fragment, error) {
	// Read the structure once with ranges bracketed by markers...
	marked := shape{items: map[string]int{}, marks: true}
	for i := range t.tmpl.Params {
		if p := &t.tmpl.Params[i]; p.Type == templates.TypeList {
			marked.items[p.Name] = min(2, slices.Max(append(itemCounts(p), 0)))
		}
	}
	r, err := t.evaluate(fixed, marked)
	if err != nil {
		return nil, fragment{}, err
	}
	doc, err := decode(r.text)
	if err != nil {
		if len(r.ranges) > 0 {
			// Markers around a range break YAML only when it spans values.
			return nil, fragment{}, t.refuse("a range over parameter %s produces YAML structure (several values or list items), not text within one value", r.ranges[0].Name)
		}
		return nil, fragment{}, t.refuse("the fragment is not YAML once rendered: %s", err)
	}
	typedMarkers, err := t.checkLanding(r, doc)
	if err != nil {
		return nil, fragment{}, err
	}
	n, err := t.buildNode(doc, typedMarkers, r.ranges)
	if err != nil {
		return nil, fragment{}, err
	}
	// ...then prove it against real unrollings with every item count in
	// range, holes as markers.
	lists := map[*templates.Param]bool{}
	for _, p := range r.ranges {
		lists[p] = true
	}
	for _, counts := range product(slices.SortedFunc(maps.Keys(lists), byName), itemCounts) {
		if err := t.verifyShape(fixed, n, counts); err != nil {
			return nil, fragment{}, err
		}
	}
	if err := t.verifyRender(fixed, n); err != nil {
		return nil, fragment{}, err
	}
	f, err := t.extract(n)
	return n, f, err
}

func byName(a, b *templates.Param) int { return strings.Compare(a.Name, b.Name) }

func (t *compiler) verifyShape(fixed map[string]any, n node, counts map[string]int) error {
	r, err := t.evaluate(fixed, shape{items: counts})
	if err != nil {
		return err
	}
	doc, err := decode(r.text)
	if err != nil {
		return t.refuse("the fragment is not YAML with %s: %s", describeCounts(counts), err)
	}
	if _, err := t.checkLanding(r, doc); err != nil {
		return err
	}
	got := eval(n, markerValues{t: t, counts: counts, markersOnly: true})
	if !reflect.DeepEqual(got, doc) {
		return t.refuse("the fragment's YAML structure changes with %s: %s", describeCounts(counts), describeDiff(got, doc))
	}
	return nil
}

func describeCounts(counts map[string]int) string {
	if len(counts) == 0 {
		return "its parameters substituted"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d item(s) of %s", counts[k], k))
	}
	return strings.Join(parts, ", ")
}

// verifyRender checks the compiled form against the template engine itself,
// with the variant's values and every other parameter's default.
func (t *compiler) verifyRender(fixed map[string]any, n node) error {
	overrides := map[string]string{}
	vals := rawValues{}
	for i := range t.tmpl.Params {
		p := &t.tmpl.Params[i]
		vals[p.Name] = p.Default
	}
	for k, v := range fixed {
		overrides[k] = fmt.Sprint(v)
		vals[k] = fmt.Sprint(v)
	}
	text, err := t.tmpl.RenderYAML(overrides)
	if err != nil {
		return t.refuse("rendering with %v: %s", overrides, err)
	}
	want, err := decode(string(text))
	if err != nil {
		return t.refuse("rendering with %v: %s", overrides, err)
	}
	if got := eval(n, vals); !reflect.DeepEqual(got, want) {
		return t.refuse("internal: the compiled fragment differs from the rendered one with %v: %s", overrides, describeDiff(got, want))
	}
	return nil
}
