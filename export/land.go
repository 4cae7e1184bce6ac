package export

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml3 "go.yaml.in/yaml/v3"

	"github.com/graftdev/graft/templates"
)

// Where holes land. A hole was rendered as a marker of letters and digits,
// which YAML reads alike in every context. The real value reads the same,
// with its text in the marker's place, when every character it can hold is
// inert where the marker landed: that is what these checks prove, from the
// hole's character sets and the scalar the marker landed in.

// scalarAt is a YAML scalar holding at least one marker.
type scalarAt struct {
	style  yaml3.Style
	key    bool
	flow   bool
	value  string
	offset int // byte offset of the scalar's first character
}

// scalarsWithMarkers lists the scalars of text that hold markers, by
// offset.
func scalarsWithMarkers(text string) ([]scalarAt, error) {
	var doc yaml3.Node
	if err := yaml3.Unmarshal([]byte(text), &doc); err != nil {
		return nil, err
	}
	var out []scalarAt
	var visit func(n *yaml3.Node, key, flow bool)
	visit = func(n *yaml3.Node, key, flow bool) {
		switch n.Kind {
		case yaml3.ScalarNode:
			if strings.Contains(n.Value, markerPrefix) {
				out = append(out, scalarAt{style: n.Style, key: key, flow: flow, value: n.Value,
					offset: offsetOf(text, n.Line, n.Column)})
			}
		case yaml3.MappingNode:
			f := flow || n.Style&yaml3.FlowStyle != 0
			for i, c := range n.Content {
				visit(c, i%2 == 0, f)
			}
		default:
			f := flow || n.Style&yaml3.FlowStyle != 0
			for _, c := range n.Content {
				visit(c, false, f)
			}
		}
	}
	visit(&doc, false, false)
	slices.SortFunc(out, func(a, b scalarAt) int { return a.offset - b.offset })
	return out, nil
}

// plainIndicators may not start a plain scalar's value.
const plainIndicators = "-?:,[]{}#&*!|>'\"%@`"

// nonStringRunes are every rune a YAML 1.1 plain scalar that resolves to
// a number, boolean, null or timestamp can hold. A plain scalar with a
// literal rune outside them is a string, whatever its holes hold.
const nonStringRunes = "0123456789+-._:~ abcdefilnorstuxyzABCDEFILNORSTUXYZ"

// yamlSafe: printable, neither white space nor a line break.
func yamlSafe(r rune) bool {
	switch {
	case r > 0x20 && r < 0x7f:
		return true
	case r >= 0xa0 && r <= 0xd7ff:
		return r != 0x2028 && r != 0x2029
	case r >= 0xe000 && r <= 0xfffd:
		return r != 0xfeff
	}
	return r >= 0x10000 && r <= utf8.MaxRune
}

func notLineBreak(r rune) bool {
	return r != '\n' && r != '\r' && r != 0x85 && r != 0x2028 && r != 0x2029
}

// escInert: the escaping function writes r unchanged.
func escInert(kind escKind) func(rune) bool {
	if kind == escJSON {
		return func(r rune) bool {
			return r >= 0x20 && r != '"' && r != '\\' && r != '<' && r != '>' && r != '&' &&
				r != 0x2028 && r != 0x2029 && r != utf8.RuneError
		}
	}
	return func(r rune) bool { return strconv.IsPrint(r) && r != '"' && r != '\\' }
}

// styleInert: r is read as itself inside a scalar of that style.
func styleInert(s scalarAt) func(rune) bool {
	switch {
	case s.style&yaml3.DoubleQuotedStyle != 0:
		return func(r rune) bool { return yamlSafe(r) && r != '"' && r != '\\' }
	case s.style&yaml3.SingleQuotedStyle != 0:
		return func(r rune) bool { return yamlSafe(r) && r != '\'' }
	case s.style&(yaml3.LiteralStyle|yaml3.FoldedStyle) != 0:
		return yamlSafe
	}
	return func(r rune) bool {
		return yamlSafe(r) && r != '#' && !(s.flow && strings.ContainsRune(",[]{}:", r))
	}
}

func isPlain(s scalarAt) bool {
	return s.style&(yaml3.DoubleQuotedStyle|yaml3.SingleQuotedStyle|yaml3.LiteralStyle|yaml3.FoldedStyle) == 0
}

// holeChars describes the texts a hole can hold.
func holeChars(src holeSrc) chars { return paramChars(src.param) }

func holeName(src holeSrc) string {
	if src.item >= 0 {
		return "an item of parameter " + src.param.Name
	}
	return "parameter " + src.param.Name
}

// checkLanding proves every hole of r reads as its own text, and returns
// the markers that are a whole plain scalar (typed by YAML: int, bool).
func (t *compiler) checkLanding(r rendering, doc any) (map[string]bool, error) {
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	decoded := string(js)
	scalars, err := scalarsWithMarkers(r.text)
	if err != nil {
		return nil, &Refusal{Template: t.src.name, File: t.src.file, Reason: "the fragment is not YAML once rendered: " + err.Error()}
	}
	typed := map[string]bool{}
	seen := map[int]map[string]int{} // scalar -> marker -> occurrences so far
	for _, o := range r.occ {
		si := -1
		for i := range scalars {
			if scalars[i].offset <= o.offset && strings.Contains(scalars[i].value, o.marker) {
				si = i
			}
		}
		c := holeChars(o.hole.src)
		if si < 0 {
			if strings.Contains(decoded, o.marker) {
				return nil, refusalAt(t.src, o.hole.pos, "cannot tell where YAML puts %s", holeName(o.hole.src))
			}
			// Not in any value: a comment, which a line break would end.
			if !c.all.every(notLineBreak) {
				return nil, refusalAt(t.src, o.hole.pos, "%s in a YAML comment may hold a line break", holeName(o.hole.src))
			}
			continue
		}
		s := scalars[si]
		if seen[si] == nil {
			seen[si] = map[string]int{}
		}
		nth := seen[si][o.marker]
		seen[si][o.marker]++
		if s.key {
			return nil, refusalAt(t.src, o.hole.pos, "%s lands in a YAML key; keys must be fixed", holeName(o.hole.src))
		}
		escs := o.hole.escs
		whole := len(escs) > 0 && s.style&yaml3.DoubleQuotedStyle != 0 && s.offset == o.escOpen
		for i, e := range escs {
			if whole && i == len(escs)-1 {
				continue
			}
			if !c.all.every(escInert(e.kind)) {
				return nil, refusalAt(t.src, e.pos, "%s inside a larger text through %s may hold characters %s escapes (%s), which a policy cannot reproduce",
					holeName(o.hole.src), e.kind, e.kind, c.all.describe(escInert(e.kind)))
			}
		}
		if whole {
			continue
		}
		if !c.all.every(styleInert(s)) {
			return nil, refusalAt(t.src, o.hole.pos, "%s may hold characters YAML reads specially here (%s); quote it with `| quote`",
				holeName(o.hole.src), c.all.describe(styleInert(s)))
		}
		if err := t.checkNeighbours(s, o, nth, c); err != nil {
			return nil, err
		}
		if isPlain(s) {
			isTyped, err := t.checkPlainType(s, o)
			if err != nil {
				return nil, err
			}
			if isTyped {
				typed[o.marker] = true
			}
		}
	}
	return typed, nil
}

// checkNeighbours checks what a hole's first and last characters, or its
// absence when it can be empty, make of the characters around it.
func (t *compiler) checkNeighbours(s scalarAt, o occurrence, nth int, c chars) error {
	at := nthIndex(s.value, o.marker, nth)
	before, after := s.value[:at], s.value[at+len(o.marker):]
	prevHole := endsWithMarker(before)
	nextHole := strings.HasPrefix(after, markerPrefix)
	prev, _ := utf8.DecodeLastRuneInString(before)
	next, _ := utf8.DecodeRuneInString(after)
	refuse := func(why string) error {
		return refusalAt(t.src, o.hole.pos, "%s %s", holeName(o.hole.src), why)
	}
	if c.nullable {
		if prevHole || nextHole {
			return refuse("may be empty next to another parameter")
		}
		space := func(r rune) bool { return r == ' ' || r == '\t' || !notLineBreak(r) }
		if (before != "" && space(prev)) || (after != "" && space(next)) {
			return refuse("may be empty next to white space, which YAML may then drop")
		}
		if isPlain(s) {
			if before == "" && after != "" && strings.ContainsRune(plainIndicators, next) {
				return refuse("may be empty, leaving a YAML indicator at the start of the value")
			}
			if prev == ':' && (after == "" || next == ' ') {
				return refuse("may be empty after a colon, which YAML then reads as a key")
			}
		}
	}
	if !isPlain(s) {
		return nil
	}
	startsWell := func(r rune) bool {
		return !strings.ContainsRune(plainIndicators, r) || (c.signed && (r == '-' || r == '+'))
	}
	if before == "" && !c.first.every(startsWell) {
		return refuse("may start with a YAML indicator at the start of an unquoted value; quote it with `| quote`")
	}
	if c.last.has(':') && (after == "" || next == ' ' || (nextHole && c.nullable)) {
		return refuse("may end with a colon, which YAML reads as a key; quote it with `| quote`")
	}
	return nil
}

// checkPlainType proves a plain scalar holding holes is read as a string,
// or reports that it is exactly one int or bool hole (read as a number or
// boolean) or an enum whose every value reads as a string.
func (t *compiler) checkPlainType(s scalarAt, o occurrence) (typed bool, err error) {
	literal := markerRE.ReplaceAllString(s.value, "")
	if strings.IndexFunc(literal, func(r rune) bool { return !strings.ContainsRune(nonStringRunes, r) }) >= 0 {
		return false, nil
	}
	src := o.hole.src
	if s.value == o.marker && src.item < 0 && len(o.hole.escs) == 0 {
		switch src.param.Type {
		case templates.TypeInt, templates.TypeBool:
			return true, nil
		case templates.TypeEnum:
			for _, v := range src.param.Values {
				if got, err := decode(v); err != nil || got != v {
					return false, refusalAt(t.src, o.hole.pos, "enum value %q of parameter %s is not read as a string by YAML unquoted; quote it with `| quote`", v, src.param.Name)
				}
			}
			return false, nil
		}
	}
	return false, refusalAt(t.src, o.hole.pos, "%s in an unquoted value may make YAML read it as a number, boolean or null; quote it with `| quote`", holeName(src))
}

func nthIndex(s, sub string, n int) int {
	off := 0
	for {
		i := strings.Index(s[off:], sub)
		if i < 0 {
			return -1
		}
		if n == 0 {
			return off + i
		}
		n--
		off += i + len(sub)
	}
}

func endsWithMarker(s string) bool {
	locs := markerRE.FindAllStringIndex(s, -1)
	return len(locs) > 0 && locs[len(locs)-1][1] == len(s)
}
