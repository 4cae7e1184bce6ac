package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/templates"
)

// rendering is one symbolic evaluation written out as text: every hole
// replaced by a marker naming its source.
type rendering struct {
	text string
	occ  []occurrence
	// ranges maps a range id to its list parameter.
	ranges []*templates.Param
}

// occurrence is one hole in the text.
type occurrence struct {
	hole   *holePart
	marker string
	offset int // byte offset of the marker in text
	// escOpen is the offset of the opening quote of the hole's outermost
	// escaping, -1 without one.
	escOpen int
}

// holeMarker names a hole's source, so every rendering writes the same
// marker for the same parameter or item.
func (t *compiler) holeMarker(src holeSrc) string {
	i := t.paramIndex(src.param)
	switch {
	case src.item >= 0:
		return fmt.Sprintf("%sI%d_%dQ", markerPrefix, i, src.item)
	case src.not:
		return fmt.Sprintf("%sN%dQ", markerPrefix, i)
	}
	return fmt.Sprintf("%sP%dQ", markerPrefix, i)
}

func (t *compiler) flatten(parts []part, ranges []*templates.Param) rendering {
	var b strings.Builder
	r := rendering{ranges: ranges}
	open := map[*escApp]int{}
	for _, p := range parts {
		switch {
		case p.hole != nil:
			o := occurrence{hole: p.hole, marker: t.holeMarker(p.hole.src), offset: b.Len(), escOpen: -1}
			if n := len(p.hole.escs); n > 0 {
				if at, ok := open[p.hole.escs[n-1]]; ok {
					o.escOpen = at
				}
			}
			r.occ = append(r.occ, o)
			b.WriteString(o.marker)
		case p.mark != "":
			b.WriteString(p.mark)
		default:
			if p.opens != nil {
				open[p.opens] = b.Len()
			}
			b.WriteString(p.lit)
		}
	}
	r.text = b.String()
	return r
}

// decode reads rendered text as the engine does (sigs.k8s.io/yaml, then
// JSON), keeping numbers exact.
func decode(text string) (any, error) {
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// paramText is the text a parameter value renders to: the annotation's
// own spelling, but an int in canonical decimal, and a negated bool
// flipped. raw is valid.
func paramText(p *templates.Param, raw string, not bool) string {
	switch p.Type {
	case templates.TypeInt:
		n, _ := strconv.ParseInt(raw, 10, 64)
		return strconv.FormatInt(n, 10)
	case templates.TypeBool:
		if not {
			return strconv.FormatBool(raw != "true")
		}
	}
	return raw
}

// listItems splits a valid list value as the engine does.
func listItems(raw string) []string {
	if raw == "" {
		return nil
	}
	items := strings.Split(raw, ",")
	for i, it := range items {
		items[i] = strings.TrimSpace(it)
	}
	return items
}

// offsetOf converts a 1-based line and rune column into a byte offset.
func offsetOf(text string, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	for c := 1; c < col && off < len(text); c++ {
		_, w := utf8.DecodeRuneInString(text[off:])
		off += w
	}
	return off
}
