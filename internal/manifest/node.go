package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
)

// Manifests are held as YAML nodes, not typed objects, so that unknown
// fields, key order, quantity spellings and comments survive. These
// functions convert between nodes and JSON in both directions, keeping key
// order, for the engine and the patch.

// maxExpandedBytes bounds a document's JSON once YAML aliases are expanded,
// so a small file of nested aliases cannot exhaust memory.
const maxExpandedBytes = 64 << 20

// maxDepth bounds nesting, in nodes and in JSON.
const maxDepth = 512

var errExpanded = errors.New("document too large once YAML aliases are expanded")

// checkExpansion refuses a document whose aliases would expand past
// maxExpandedBytes, estimating the size without expanding anything (each
// anchored node is measured once), so an alias bomb costs nothing.
func checkExpansion(n *yaml.Node) error {
	memo := map[*yaml.Node]int64{}
	if expandedSize(n, memo, 0) > maxExpandedBytes {
		return errExpanded
	}
	return nil
}

func expandedSize(n *yaml.Node, memo map[*yaml.Node]int64, depth int) int64 {
	if n == nil || depth > maxDepth {
		return 0 // nodeJSON reports the depth
	}
	if s, ok := memo[n]; ok {
		return s
	}
	var size int64
	switch n.Kind {
	case yaml.AliasNode:
		size = expandedSize(n.Alias, memo, depth+1)
	case yaml.ScalarNode:
		size = int64(len(n.Value)) + 3
	default:
		size = 2
		for _, c := range n.Content {
			size += expandedSize(c, memo, depth+1) + 1
			if size > maxExpandedBytes {
				break
			}
		}
	}
	size = min(size, maxExpandedBytes+1)
	memo[n] = size
	return size
}

// expandAliases replaces every alias under n by a copy of what it names
// and drops anchors, so that no node is shared: graft edits nodes in
// place, and an edit through one path must not show up at another.
// checkExpansion bounds the result.
func expandAliases(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return expandAliases(copyNode(n.Alias))
	}
	n.Anchor = ""
	for i, c := range n.Content {
		n.Content[i] = expandAliases(c)
	}
	return n
}

func hasAliases(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode {
		return true
	}
	return slices.ContainsFunc(n.Content, hasAliases)
}

func copyNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, child := range n.Content {
		c.Content[i] = copyNode(child)
	}
	return &c
}

// NodeJSON returns n as compact JSON, with keys in document order. Scalars
// are typed as kubectl types them (YAML 1.1: plain yes/no/on/off are
// booleans), so the engine sees what the API server would.
func NodeJSON(n *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	if err := appendNodeJSON(&buf, n, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func appendNodeJSON(buf *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > maxDepth {
		return atErrorf(n.Line, "nested deeper than %d", maxDepth)
	}
	if buf.Len() > maxExpandedBytes {
		return errExpanded
	}
	switch n.Kind {
	case 0: // yaml.Unmarshal of nothing
		buf.WriteString("null")
		return nil
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			buf.WriteString("null")
			return nil
		}
		return appendNodeJSON(buf, n.Content[0], depth+1)
	case yaml.AliasNode:
		return appendNodeJSON(buf, n.Alias, depth+1)
	case yaml.MappingNode:
		buf.WriteByte('{')
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return atErrorf(k.Line, "a mapping key must be a scalar")
			}
			if k.ShortTag() == "!!merge" {
				return atErrorf(k.Line, "YAML merge keys (<<) are not supported")
			}
			if seen[k.Value] {
				return atErrorf(k.Line, "duplicate key %q", k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				buf.WriteByte(',')
			}
			appendJSONString(buf, k.Value)
			buf.WriteByte(':')
			if err := appendNodeJSON(buf, v, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := appendNodeJSON(buf, c, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		return appendScalarJSON(buf, n)
	}
	return atErrorf(n.Line, "unexpected YAML node")
}

// jsonNumberRE is JSON's number grammar: such YAML numbers are copied
// verbatim, keeping spellings like 1.0 or 0.250.
var jsonNumberRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

func appendScalarJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		buf.WriteString("null")
		return nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return &atError{line: n.Line, err: err}
		}
		buf.WriteString(strconv.FormatBool(b))
		return nil
	case "!!int", "!!float":
		if jsonNumberRE.MatchString(n.Value) {
			buf.WriteString(n.Value)
			return nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return &atError{line: n.Line, err: err}
		}
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return atErrorf(n.Line, "%s is not a JSON number", n.Value)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return &atError{line: n.Line, err: err}
		}
		buf.Write(b)
		return nil
	case "!!str":
		if n.Style == 0 {
			if b, ok := yaml11Bool(n.Value); ok {
				buf.WriteString(strconv.FormatBool(b))
				return nil
			}
		}
	}
	// Strings, timestamps, binary and custom tags are strings to the API.
	appendJSONString(buf, n.Value)
	return nil
}

// yaml11Bool reports the YAML 1.1 booleans YAML 1.2 reads as strings;
// kubectl's YAML reader still takes them as booleans.
func yaml11Bool(s string) (value, ok bool) {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON":
		return true, true
	case "n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return false, true
	}
	return false, false
}

func appendJSONString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	buf.Truncate(buf.Len() - 1)
}

// MapGet returns the value of key in mapping m, or nil.
func MapGet(m *yaml.Node, key string) *yaml.Node {
	m = Deref(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return Deref(m.Content[i+1])
		}
	}
	return nil
}

// MapString returns the string value of key in m, or "": also for a
// plain y, yes, on..., which kubectl reads as a boolean (see nodeJSON).
func MapString(m *yaml.Node, key string) string {
	if v := MapGet(m, key); v != nil && IsJSONString(v) {
		return v.Value
	}
	return ""
}

// IsJSONString reports whether n is a string to kubectl (and nodeJSON).
func IsJSONString(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return false
	}
	_, isBool := yaml11Bool(n.Value)
	return !isBool || n.Style != 0
}

func Deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// KindName names a node's kind for messages.
func KindName(n *yaml.Node) string {
	switch Deref(n).Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "null"
		}
		return "a scalar"
	}
	return "empty"
}

// atError is a problem at a line of the text: "line N: problem", whose
// line a caller that names its own position can take apart.
type atError struct {
	line int
	err  error
}

func atErrorf(line int, format string, args ...any) error {
	return &atError{line: line, err: fmt.Errorf(format, args...)}
}

func (e *atError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *atError) Unwrap() error { return e.err }
