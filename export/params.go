package export

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/imageref"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// Parameters in CEL. A Pod sets parameter p of template t with the
// annotation graft.dev/t.p; without it the profile's value, or else the
// template's default, applies. The parameters a template's fragment shows
// are one policy variable per template, a map from parameter name to its
// text (paramText), and its list parameters a second, to their items. One
// variable per template rather than per parameter: the API server enters
// every declared variable in a lazy map for each set of expressions it
// evaluates, so each costs every evaluation of the policy, and a selected
// template reads nearly all its parameters anyway.

// celIdent makes a CEL identifier of a template name; template names are
// DNS labels, so the mapping is one to one.
func celIdent(prefix, tmpl string) string {
	return prefix + "_" + strings.ReplaceAll(tmpl, "-", "_")
}

func annotationKey(tmpl, param string) string { return names.ParamAnnotation(tmpl, param) }

// paramVars names a profile's parameter variables.
type paramVars struct {
	tmpl string
}

func (v paramVars) text(src holeSrc) string {
	t := "variables." + celIdent("p", v.tmpl) + "[" + celString(src.param.Name) + "]"
	if src.not {
		return "(" + t + ` == "true" ? "false" : "true")`
	}
	return t
}

func (v paramVars) list(p *templates.Param) string {
	return "variables." + celIdent("l", v.tmpl) + "[" + celString(p.Name) + "]"
}

// rawValue is a CEL string: the annotation's value when the profile
// admits it (rule), else the profile's value or the default, as the
// engine does for profiles with onInvalidParams: default. Profiles that
// deny invalid values need it too: the validating policy refuses such a
// Pod, but only after mutation, and a value the Pod cannot hold (a bad
// quantity) would fail the mutation itself with another error.
func (pr *profile) rawValue(tmpl string, p *templates.Param) string {
	key := celString(annotationKey(tmpl, p.Name))
	v := "variables.annotations[" + key + "]"
	return "(" + key + " in variables.annotations && " + pr.rule(tmpl, p, v) + ` == "" ? ` + v + " : " + celString(pr.defaults[tmpl][p.Name]) + ")"
}

// rule is a CEL string: "" when v (a CEL string) is a value the profile
// admits for parameter p of template tmpl, else the rule it breaks, in
// the engine's words: the parameter's own rule (ruleExpr), then the
// profile's guards (inject's guardParam): a locked parameter keeps the
// profile's value, and no value may need a Pod Security level above the
// profile's podSecurity.maxLevel.
func (pr *profile) rule(tmpl string, p *templates.Param, v string) string {
	own := ruleExpr(p, v)
	var guards []string
	if pr.cfg.Locks(tmpl, p.Name) {
		guards = append(guards, v+" != "+celString(pr.defaults[tmpl][p.Name])+" ? "+celString(inject.LockedRule(tmpl, p.Name, pr.name)))
	}
	max := pr.cfg.PodSecurity.MaxLevel
	values := p.Values
	if p.Type == templates.TypeBool {
		values = []string{"false", "true"}
	}
	for _, val := range values {
		if l, ok := p.PodSecurity[val]; ok && !max.Allows(l) {
			guards = append(guards, v+" == "+celString(val)+" ? "+celString(inject.LevelRule(tmpl, p.Name, val, l, max, pr.name)))
		}
	}
	if len(guards) == 0 {
		return own
	}
	return "(" + own + ` != "" ? ` + own + " : " + strings.Join(guards, " : ") + ` : "")`
}

// textExpr is a CEL string: the text a valid raw value renders to. The
// conversion to string types it for the homogeneous list literals CEL
// insists on; the annotations map may be typed dyn.
func textExpr(p *templates.Param, raw string) string {
	if p.Type == templates.TypeInt {
		return "string(int(" + raw + "))"
	}
	return "string(" + raw + ")"
}

// itemsExpr is a CEL list of strings: a valid list value's items.
func itemsExpr(raw string) string {
	return "(" + raw + ` == "" ? [] : ` + raw + `.split(",").map(it, it.trim()))`
}

// celQuote is Go's %q of a CEL string, as the engine's messages print
// values: strings.quote escapes what Go escapes by name, and the replaces
// the other ASCII control characters, which Go writes as \x escapes.
// (Go also escapes non-printable runes above ASCII; CEL leaves them.)
func celQuote(s string) string {
	var b strings.Builder
	b.WriteString("strings.quote(" + s + ")")
	for r := rune(0); r < 0x20 || r == 0x7f; r++ {
		switch r {
		case '\a', '\b', '\f', '\n', '\r', '\t', '\v':
			continue
		}
		fmt.Fprintf(&b, `.replace("\x%02x", "\\x%02x")`, r, r)
		if r == 0x1f {
			r = 0x7e
		}
	}
	return b.String()
}

// ruleExpr is a CEL string: "" when v (a CEL string) is a valid value of
// p, else the rule it breaks, word for word as templates.Param.Parse says.
// It is parenthesized: CEL reads a conditional's middle operand only up
// to the next "?".
func ruleExpr(p *templates.Param, v string) string { return "(" + ruleBody(p, v) + ")" }

func ruleBody(p *templates.Param, v string) string {
	switch p.Type {
	case templates.TypeString:
		pattern := `""`
		if p.Pattern != "" {
			pattern = "(" + v + ".matches(" + celString(p.Pattern) + `) ? "" : ` + celString("must match "+p.Pattern) + ")"
		}
		return formatRule(p, v, celString(p.FormatRule()), pattern)
	case templates.TypeInt:
		digits := v + `.find("[1-9][0-9]*")`
		fits := "(size(" + digits + ") < 19 || size(" + digits + ") == 19 && " + digits + " <= (" + v +
			`.startsWith("-") ? "9223372036854775808" : "9223372036854775807"))`
		return "!" + v + `.matches("^[+-]?[0-9]+$") || !` + fits + ` ? "must be an integer" : ` +
			bounds(p, ordered("int("+v+")", canonicalInt))
	case templates.TypeBool:
		return v + ` == "true" || ` + v + ` == "false" ? "" : ` + celString(`must be "true" or "false"`)
	case templates.TypeQuantity:
		return "!isQuantity(" + v + `) ? "must be a Kubernetes quantity such as 100m or 64Mi" : ` +
			bounds(p, comparison{
				func(b string) string { return "quantity(" + v + ").isLessThan(quantity(" + celString(b) + "))" },
				func(b string) string { return "quantity(" + v + ").isGreaterThan(quantity(" + celString(b) + "))" }})
	case templates.TypeEnum:
		var vals []string
		for _, e := range p.Values {
			vals = append(vals, celString(e))
		}
		return v + " in [" + strings.Join(vals, ", ") + `] ? "" : ` + celString("must be one of "+strings.Join(p.Values, ", "))
	case templates.TypeDuration:
		return "!(" + durationValid(v) + `) ? "must be a duration such as 30s or 5m" : ` +
			bounds(p, ordered("duration("+v+")", func(b string) string { return "duration(" + celString(b) + ")" }))
	case templates.TypeList:
		return listRule(p, itemsExpr(v))
	}
	return `""`
}

// canonicalInt writes a valid int bound as a CEL literal.
func canonicalInt(b string) string {
	n, _ := strconv.ParseInt(b, 10, 64)
	return strconv.FormatInt(n, 10)
}

// comparison writes the CEL conditions "value below bound" and "value
// above bound".
type comparison struct{ below, above func(bound string) string }

// bounds checks a value against Min and Max.
func bounds(p *templates.Param, c comparison) string {
	out := ""
	if p.Min != "" {
		out += c.below(p.Min) + " ? " + celString("must be at least "+p.Min) + " : "
	}
	if p.Max != "" {
		out += c.above(p.Max) + " ? " + celString("must be at most "+p.Max) + " : "
	}
	return out + `""`
}

// ordered compares values CEL orders with < and >.
func ordered(val string, lit func(string) string) comparison {
	return comparison{func(b string) string { return val + " < " + lit(b) },
		func(b string) string { return val + " > " + lit(b) }}
}

// durationRE is what time.ParseDuration reads.
const durationRE = `^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

// durationValid: v parses as a time.Duration. Past the grammar, Go also
// refuses durations beyond 2^63-1 ns; this adds the components up in
// floating point, which decides the same except within a microsecond or
// so of that bound.
func durationValid(v string) string {
	units := `{"ns": 1.0, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 6e10, "h": 3.6e12}`
	return v + ".matches(" + celString(durationRE) + ") && " + v +
		`.findAll("[0-9.]*[^0-9.]+").map(c, c.find("^[0-9.]*") == "" ? 0.0 : double(c.find("^[0-9.]*")) * ` +
		units + `[c.substring(size(c.find("^[0-9.]*")))]).sum() < 9.223372036854775807e18`
}

// formatRule is a CEL string: what Param.Parse says of v (a CEL string)
// that is not of p's format, after prefix (a CEL string); else
// otherwise.
func formatRule(p *templates.Param, v, prefix, otherwise string) string {
	if p.Format == templates.FormatImage {
		return imageref.CELProblem(v, prefix, otherwise)
	}
	return otherwise
}

// listRule checks a list's items in order, then their number.
func listRule(p *templates.Param, items string) string {
	bad := `it == ""`
	if p.Format == templates.FormatImage {
		bad += " || !" + imageref.CELValid("it")
	}
	if p.Pattern != "" {
		bad += " || !it.matches(" + celString(p.Pattern) + ")"
	}
	first := items + ".filter(it, " + bad + ")[0]"
	out := items + ".exists(it, " + bad + `) ? (` + first + ` == "" ? "must be a comma-separated list without empty items" : `
	pattern := `""`
	if p.Pattern != "" {
		pattern = `"item " + ` + celQuote(first) + " + " + celString(" must match "+p.Pattern)
	}
	out += formatRule(p, first, `"item " + `+celQuote(first)+" + "+celString(" "+p.FormatRule()), pattern)
	out += ") : "
	if p.Min != "" {
		out += "size(" + items + ") < " + canonicalInt(p.Min) + " ? " + celString("must have at least "+p.Min+" items") + " : "
	}
	if p.Max != "" {
		out += "size(" + items + ") > " + canonicalInt(p.Max) + " ? " + celString("must have at most "+p.Max+" items") + " : "
	}
	return out + `""`
}
