// Package imageref is graft's one rule for container image references:
// which strings are images (Check), and which images an allowedImages
// entry admits (Admits, Expand). The engine applies it in Go; the
// guarantee and the exported policies apply the same regular expressions
// in CEL (CELProblem, CELValid), which kube-apiserver runs with the same
// RE2 engine, so the webhook and the policies refuse the same images.
package imageref

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// Grammar is the syntax of an image reference, the distribution
// project's (what container runtimes parse), anchored:
// [host[:port]/]path[:tag][@digest], where the host is DNS labels or a
// bracketed IPv6 address, the path is lowercase components joined by "/"
// (each alphanumerics joined by ".", "_", "__" or dashes), the tag a word
// character and up to 127 word characters, dots and dashes, and the
// digest algorithm:hex.
const Grammar = `^` + name + `(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`

const (
	component = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	label     = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	host      = `(?:` + label + `(?:\.` + label + `)*|\[[a-fA-F0-9:]+\])`
	name      = `(?:` + host + `(?::[0-9]+)?/)?` + component + `(?:/` + component + `)*`
)

// rule is one way a string fails to be an image reference, with what
// graft says of it. A string is an image reference when it matches no
// rule's bad but the last's and matches Grammar. The rules name common
// mistakes; Grammar refuses them all but "..", which it admits inside a
// tag. The last rule (upper case) names the mistake of a string Grammar
// refuses.
type rule struct{ bad, message string }

var rules = []rule{
	{`^$`, "it is empty"},
	{`\s`, "it contains whitespace"},
	{`\.\.`, `it contains ".."`},
	{`^/|//|/$|/[:@]`, `it has an empty path segment`},
	{`[A-Z]`, "it has upper-case letters (only the registry host may)"},
}

// notGrammar is what graft says of a string no rule names that does
// not match Grammar.
const notGrammar = "want [registry[:port]/]path[:tag][@algorithm:hex], " +
	"path components of lowercase letters and digits joined by '.', '_' or '-'"

type compiled struct {
	bad     *regexp.Regexp
	message string
}

// checks are rules compiled, then the grammar; they hold no state.
var (
	checks  = compile()
	grammar = regexp.MustCompile(Grammar)
)

func compile() []compiled {
	out := make([]compiled, len(rules))
	for i, r := range rules {
		out[i] = compiled{regexp.MustCompile(r.bad), r.message}
	}
	return out
}

// Check returns nil when s is an image reference, else what is wrong
// with it ("it contains \"..\"").
func Check(s string) error {
	last := len(checks) - 1
	for _, c := range checks[:last] {
		if c.bad.MatchString(s) {
			return errors.New(c.message)
		}
	}
	if !grammar.MatchString(s) {
		// Upper-case letters are allowed in the host only, so they name
		// the mistake only once the grammar refused the string.
		if checks[last].bad.MatchString(s) {
			return errors.New(checks[last].message)
		}
		return errors.New(notGrammar)
	}
	return nil
}

// Boundaries are the characters at which an allowedImages entry may end
// inside an image: the path goes on ("/"), a tag follows (":") or a
// digest ("@").
const Boundaries = "/:@"

// endsAtBoundary reports whether entry ends with one of Boundaries.
func endsAtBoundary(entry string) bool {
	return entry != "" && strings.ContainsRune(Boundaries, rune(entry[len(entry)-1]))
}

// CheckEntry returns nil when entry may be listed in allowedImages: an
// image reference, or one followed by one of Boundaries
// ("ghcr.io/graftdev/", "docker.io/envoyproxy/envoy:").
func CheckEntry(entry string) error {
	if endsAtBoundary(entry) {
		entry = entry[:len(entry)-1]
	}
	return Check(entry)
}

// Expand is what an allowedImages entry admits, as the policies list it:
// an image equal to exact (none when the entry ends at a boundary), and
// images starting with one of prefixes. An entry ending at a boundary is
// its own prefix; any other continues at one of Boundaries, so that
// docker.io/envoyproxy/envoy admits docker.io/envoyproxy/envoy:v1 and
// docker.io/envoyproxy/envoy@sha256:... but not
// docker.io/envoyproxy/envoy-evil:1.
func Expand(entry string) (exact string, prefixes []string) {
	if endsAtBoundary(entry) {
		return "", []string{entry}
	}
	for _, b := range Boundaries {
		prefixes = append(prefixes, entry+string(b))
	}
	return entry, prefixes
}

// Admits reports whether an allowedImages entry admits image, which the
// caller has checked is an image reference.
func Admits(entry, image string) bool {
	rest, ok := strings.CutPrefix(image, entry)
	switch {
	case !ok:
		return false
	case rest == "", endsAtBoundary(entry):
		return true
	}
	return strings.ContainsRune(Boundaries, rune(rest[0]))
}

// CELValid is a CEL boolean: whether the CEL string v is an image
// reference, as Check decides.
func CELValid(v string) string {
	return "(" + v + ".matches(" + celString(Grammar) + `) && !` + v + `.contains(".."))`
}

// CELProblem is a CEL string: what Check says is wrong with the CEL
// string v, after prefix (a CEL string expression); otherwise (a CEL
// string expression) when v is an image reference.
func CELProblem(v, prefix, otherwise string) string {
	var b strings.Builder
	b.WriteString("(")
	for _, r := range rules[:len(rules)-1] {
		b.WriteString(v + ".matches(" + celString(r.bad) + ") ? " + prefix + " + " + celString(r.message) + " : ")
	}
	last := rules[len(rules)-1]
	b.WriteString("!" + v + ".matches(" + celString(Grammar) + ") ? " + prefix + " + (" + v + ".matches(" + celString(last.bad) + ") ? " +
		celString(last.message) + " : " + celString(notGrammar) + ") : " + otherwise + ")")
	return b.String()
}

// celString writes s as a CEL string literal: Go's quoting, which CEL
// reads the same for the ASCII text of the rules.
func celString(s string) string { return strconv.Quote(s) }
