package export

import (
	"regexp/syntax"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/graftdev/graft/templates"
)

// maxSetRunes bounds an explicit rune set; a larger one (a negated class,
// say) is treated as "any rune", which only makes the checks stricter.
const maxSetRunes = 4096

// runeSet is a set of runes, or every rune.
type runeSet struct {
	any bool
	m   map[rune]bool
}

func anyRunes() runeSet { return runeSet{any: true} }

func runesOf(s string) runeSet {
	rs := runeSet{m: map[rune]bool{}}
	for _, r := range s {
		rs.m[r] = true
	}
	return rs
}

func (s runeSet) union(o runeSet) runeSet {
	if s.any || o.any {
		return anyRunes()
	}
	out := runeSet{m: make(map[rune]bool, len(s.m)+len(o.m))}
	for r := range s.m {
		out.m[r] = true
	}
	for r := range o.m {
		out.m[r] = true
	}
	return out
}

// every reports whether every rune of s satisfies ok; never for "any".
func (s runeSet) every(ok func(rune) bool) bool {
	if s.any {
		return false
	}
	for r := range s.m {
		if !ok(r) {
			return false
		}
	}
	return true
}

func (s runeSet) has(r rune) bool { return s.any || s.m[r] }

// describe lists the runes of s that break ok, for messages.
func (s runeSet) describe(ok func(rune) bool) string {
	if s.any {
		return "any character"
	}
	var bad []rune
	for r := range s.m {
		if !ok(r) {
			bad = append(bad, r)
		}
	}
	slices.Sort(bad)
	out := ""
	for i, r := range bad {
		if i == 8 {
			return out + " …"
		}
		if i > 0 {
			out += " "
		}
		out += strconv.QuoteRune(r)
	}
	return out
}

// chars describes every text a hole can hold: the runes anywhere in it,
// the runes it can start and end with, and whether it can be empty.
type chars struct {
	all, first, last runeSet
	nullable         bool
	// signed: a leading + or - is always followed by a digit or a dot,
	// so it never reads as a YAML indicator.
	signed bool
}

func anyChars() chars {
	return chars{all: anyRunes(), first: anyRunes(), last: anyRunes(), nullable: true}
}

// exactChars describes a finite set of texts exactly.
func exactChars(values ...string) chars {
	c := chars{all: runeSet{m: map[rune]bool{}}, first: runeSet{m: map[rune]bool{}}, last: runeSet{m: map[rune]bool{}}}
	for _, v := range values {
		if v == "" {
			c.nullable = true
			continue
		}
		for _, r := range v {
			c.all.m[r] = true
		}
		f, _ := utf8.DecodeRuneInString(v)
		l, _ := utf8.DecodeLastRuneInString(v)
		c.first.m[f] = true
		c.last.m[l] = true
	}
	return c
}

// setChars is any non-empty text of runes from set.
func setChars(set string) chars {
	rs := runesOf(set)
	return chars{all: rs, first: rs, last: rs}
}

// Characters of the texts each parameter type renders to. Quantities and
// durations keep the annotation's own spelling, so their sets are those
// resource.ParseQuantity and time.ParseDuration accept.
var (
	intChars      = chars{all: runesOf("-0123456789"), first: runesOf("-0123456789"), last: runesOf("0123456789"), signed: true}
	quantityChars = signed(setChars("+-.0123456789eEKMGTPimnuk"))
	durationChars = signed(setChars("+-.0123456789nsuµμmh"))
)

func signed(c chars) chars {
	c.signed = true
	return c
}

// paramChars describes the texts parameter p renders to (for a list: each
// item).
func paramChars(p *templates.Param) chars {
	switch p.Type {
	case templates.TypeInt:
		return intChars
	case templates.TypeBool:
		return exactChars("true", "false")
	case templates.TypeEnum:
		return exactChars(p.Values...)
	case templates.TypeQuantity:
		return quantityChars
	case templates.TypeDuration:
		return durationChars
	case templates.TypeString, templates.TypeList:
		c := patternChars(p.Pattern)
		if p.Type == templates.TypeList {
			c.nullable = false // items are never empty
		}
		return c
	}
	return anyChars()
}

// patternChars describes the strings a parameter pattern accepts. Go's
// MatchString searches, so only a pattern anchored at both ends bounds the
// whole value; anything else is "any text".
func patternChars(pattern string) chars {
	if pattern == "" {
		return anyChars()
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return anyChars()
	}
	re = re.Simplify()
	if !anchoredStart(re) || !anchoredEnd(re) {
		return anyChars()
	}
	return regexChars(re)
}

func anchoredStart(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginText:
		return true
	case syntax.OpCapture:
		return anchoredStart(re.Sub[0])
	case syntax.OpConcat:
		return len(re.Sub) > 0 && anchoredStart(re.Sub[0])
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !anchoredStart(s) {
				return false
			}
		}
		return true
	}
	return false
}

func anchoredEnd(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEndText:
		return true
	case syntax.OpCapture:
		return anchoredEnd(re.Sub[0])
	case syntax.OpConcat:
		return len(re.Sub) > 0 && anchoredEnd(re.Sub[len(re.Sub)-1])
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !anchoredEnd(s) {
				return false
			}
		}
		return true
	}
	return false
}

// regexChars computes the first, last and all rune sets of a regular
// expression's language, and whether it holds the empty string.
func regexChars(re *syntax.Regexp) chars {
	empty := func() chars {
		return chars{all: runeSet{m: map[rune]bool{}}, first: runeSet{m: map[rune]bool{}}, last: runeSet{m: map[rune]bool{}}}
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return empty()
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		c := empty()
		c.nullable = true
		return c
	case syntax.OpLiteral:
		var vals []string
		for _, r := range re.Rune {
			vals = append(vals, string(foldRunes(r, re.Flags&syntax.FoldCase != 0)))
		}
		if len(vals) == 0 {
			c := empty()
			c.nullable = true
			return c
		}
		first, last := runesOf(vals[0]), runesOf(vals[len(vals)-1])
		all := runeSet{m: map[rune]bool{}}
		for _, v := range vals {
			all = all.union(runesOf(v))
		}
		return chars{all: all, first: first, last: last}
	case syntax.OpCharClass:
		rs := runeSet{m: map[rune]bool{}}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if int(hi-lo)+len(rs.m) > maxSetRunes {
				rs = anyRunes()
				break
			}
			for r := lo; r <= hi; r++ {
				rs.m[r] = true
			}
		}
		return chars{all: rs, first: rs, last: rs}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return chars{all: anyRunes(), first: anyRunes(), last: anyRunes()}
	case syntax.OpCapture:
		return regexChars(re.Sub[0])
	case syntax.OpStar, syntax.OpQuest:
		c := regexChars(re.Sub[0])
		c.nullable = true
		return c
	case syntax.OpPlus:
		return regexChars(re.Sub[0])
	case syntax.OpRepeat:
		c := regexChars(re.Sub[0])
		if re.Min == 0 {
			c.nullable = true
		}
		if re.Max == 0 {
			c = empty()
			c.nullable = true
		}
		return c
	case syntax.OpConcat:
		out := empty()
		out.nullable = true
		for _, s := range re.Sub {
			c := regexChars(s)
			out.all = out.all.union(c.all)
			if out.nullable {
				out.first = out.first.union(c.first)
			}
			if c.nullable {
				out.last = out.last.union(c.last)
			} else {
				out.last = c.last
			}
			out.nullable = out.nullable && c.nullable
		}
		return out
	case syntax.OpAlternate:
		out := empty()
		for _, s := range re.Sub {
			c := regexChars(s)
			out.all = out.all.union(c.all)
			out.first = out.first.union(c.first)
			out.last = out.last.union(c.last)
			out.nullable = out.nullable || c.nullable
		}
		return out
	}
	return anyChars()
}

// foldRunes returns r and, when fold is set, every rune it case-folds to.
func foldRunes(r rune, fold bool) []rune {
	out := []rune{r}
	if !fold {
		return out
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		out = append(out, f)
	}
	return out
}
