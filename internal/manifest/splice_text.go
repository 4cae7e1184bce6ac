package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// errNoSplice says a change cannot be written as an edit of the original
// text; the caller re-encodes the document instead.
var errNoSplice = errors.New("cannot be spliced into the text")

func noSplice(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errNoSplice}, args...)...)
}

// yamlText is one YAML document's text, indexed by line, with the
// positions yaml.v3 reports (1-based lines, columns in characters)
// turned into byte offsets. Only block structure is located by
// indentation; flow collections and scalars are located by scanning.
type yamlText struct {
	b     []byte
	lines []int  // byte offset of each line's first byte
	nl    string // the text's line break: "\r\n" if it uses them, else "\n"
}

func newYAMLText(b []byte) *yamlText {
	t := &yamlText{b: b, nl: "\n"}
	if bytes.Contains(b, []byte("\r\n")) {
		t.nl = "\r\n"
	}
	for off := 0; off < len(b); {
		t.lines = append(t.lines, off)
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	return t
}

func (t *yamlText) numLines() int { return len(t.lines) }

// next returns the offset just after line i's break (or the end of text).
func (t *yamlText) next(i int) int {
	if i+1 < len(t.lines) {
		return t.lines[i+1]
	}
	return len(t.b)
}

// line returns line i (0-based) without its line break.
func (t *yamlText) line(i int) []byte {
	l := t.b[t.lines[i]:t.next(i)]
	l = bytes.TrimSuffix(l, []byte("\n"))
	return bytes.TrimSuffix(l, []byte("\r"))
}

// hasBreak reports whether line i ends with a line break.
func (t *yamlText) hasBreak(i int) bool {
	return t.next(i) > t.lines[i] && t.b[t.next(i)-1] == '\n'
}

// offset returns the byte offset of a node's position.
func (t *yamlText) offset(n *yaml.Node) (int, error) {
	if n.Line < 1 || n.Line > len(t.lines) || n.Column < 1 {
		return 0, noSplice("position %d:%d outside the text", n.Line, n.Column)
	}
	l := t.line(n.Line - 1)
	off := 0
	for range n.Column - 1 {
		if off >= len(l) {
			return 0, noSplice("column %d past the end of line %d", n.Column, n.Line)
		}
		_, w := utf8.DecodeRune(l[off:])
		off += w
	}
	return t.lines[n.Line-1] + off, nil
}

// lineOf returns the 0-based line holding byte offset off.
func (t *yamlText) lineOf(off int) int {
	lo, hi := 0, len(t.lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if t.lines[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// indentation splits a line into its leading spaces' count and the rest.
func indentation(l []byte) (int, []byte) {
	n := 0
	for n < len(l) && l[n] == ' ' {
		n++
	}
	return n, bytes.TrimRight(l[n:], " \t")
}

func isDash(rest []byte) bool {
	return len(rest) > 0 && rest[0] == '-' && (len(rest) == 1 || rest[1] == ' ')
}

// firstOnLine reports whether n is the first thing on its line, and
// returns its indentation.
func (t *yamlText) firstOnLine(n *yaml.Node) (int, bool) {
	ind, _ := indentation(t.line(n.Line - 1))
	return ind, ind == n.Column-1
}

// extentEnd returns the last line of the block entry starting on line
// first (0-based) whose key or dash is at column col (1-based): the
// following lines indented deeper, comments among them, and, for a
// mapping entry, the "- " lines of a sequence written at the key's own
// indentation (the compact style). Blank lines and shallower comments
// after the last such line are not part of it.
func (t *yamlText) extentEnd(first, col int, item bool) int {
	last := first
	for i := first + 1; i < t.numLines(); i++ {
		ind, rest := indentation(t.line(i))
		switch {
		case len(rest) == 0:
		case rest[0] == '#':
			if ind > col-1 {
				last = i
			}
		case ind > col-1, !item && ind == col-1 && isDash(rest):
			last = i
		default:
			return last
		}
	}
	return last
}

// headStart returns the first of the comment lines directly above line i
// indented as it is (the entry's head comment), or i, never going above
// floor.
func (t *yamlText) headStart(i, floor int) int {
	ind, _ := indentation(t.line(i))
	for i > floor {
		pind, rest := indentation(t.line(i - 1))
		if len(rest) == 0 || rest[0] != '#' || pind != ind {
			break
		}
		i--
	}
	return i
}

// nodeSpan returns the byte span of a scalar written on one line or of a
// flow collection; block collections and block scalars have none.
func (t *yamlText) nodeSpan(n *yaml.Node) (start, end int, err error) {
	start, err = t.offset(n)
	if err != nil {
		return 0, 0, err
	}
	switch {
	case n.Kind == yaml.ScalarNode:
		end, err = t.scalarEnd(n, start)
	case (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && n.Style&yaml.FlowStyle != 0:
		end, err = t.flowEnd(start)
	default:
		err = noSplice("line %d: a block collection has no single span", n.Line)
	}
	return start, end, err
}

// scalarEnd finds where the one-line scalar n starting at start ends.
func (t *yamlText) scalarEnd(n *yaml.Node, start int) (int, error) {
	lineEnd := t.lines[n.Line-1] + len(t.line(n.Line-1))
	s := t.b[start:lineEnd]
	switch {
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return 0, noSplice("line %d: block scalar", n.Line)
	case n.Style&yaml.DoubleQuotedStyle != 0:
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				return start + i + 1, nil
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		for i := 1; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					i++
					continue
				}
				return start + i + 1, nil
			}
		}
	default:
		end := len(s)
		for i := 1; i < len(s); i++ {
			if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
				end = i
				break
			}
		}
		plain := bytes.TrimRight(s[:end], " \t")
		if len(s) > 0 && s[0] == '#' {
			plain = nil // an empty null before a comment
		}
		// A plain scalar's text is its value, unless it is folded over
		// lines, tagged or otherwise not what it seems.
		if string(plain) != n.Value {
			return 0, noSplice("line %d: scalar %q is not written as one plain word run", n.Line, n.Value)
		}
		return start + len(plain), nil
	}
	return 0, noSplice("line %d: quoted scalar continues on the next line", n.Line)
}

// flowEnd finds the end of the flow collection opening at start, skipping
// quoted strings and comments.
func (t *yamlText) flowEnd(start int) (int, error) {
	b := t.b
	if start >= len(b) || (b[start] != '[' && b[start] != '{') {
		return 0, noSplice("no flow collection at offset %d", start)
	}
	depth := 0
	prev := byte('[') // the last byte that is not a space: may a quote open a string?
	for i := start; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		case c == '#' && (b[i-1] == ' ' || b[i-1] == '\t' || b[i-1] == '\n'):
			for i < len(b) && b[i] != '\n' {
				i++
			}
			continue
		case (c == '"' || c == '\'') && bytes.IndexByte([]byte("[{,:?"), prev) >= 0:
			j, ok := quotedEnd(b, i)
			if !ok {
				return 0, noSplice("unterminated quoted string in a flow collection")
			}
			i = j - 1
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			prev = c
		}
	}
	return 0, noSplice("unterminated flow collection")
}

// quotedEnd returns the offset after the quoted string opening at i.
func quotedEnd(b []byte, i int) (int, bool) {
	q := b[i]
	for j := i + 1; j < len(b); j++ {
		switch {
		case q == '"' && b[j] == '\\':
			j++
		case b[j] == q && q == '\'' && j+1 < len(b) && b[j+1] == '\'':
			j++
		case b[j] == q:
			return j + 1, true
		}
	}
	return 0, false
}
