package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
)

// jsonNode parses one JSON value into a YAML node tree in block style,
// keeping key order and number spellings.
func jsonNode(data []byte) (*yaml.Node, error) { return jsonNodeAt(data, nil) }

// jsonNodeAt is jsonNode whose nodes' Line is lineAt of their offset in
// data (0 with a nil lineAt), for messages.
func jsonNodeAt(data []byte, lineAt func(off int64) int) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if lineAt == nil {
		lineAt = func(int64) int { return 0 }
	}
	n, err := decodeJSONNode(dec, 0, lineAt)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return n, nil
}

func decodeJSONNode(dec *json.Decoder, depth int, lineAt func(int64) int) (*yaml.Node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	// The offset just past the token: on its line unless the token is a
	// string with a line break, which JSON does not allow.
	line := lineAt(dec.InputOffset() - 1)
	n, err := jsonTokenNode(dec, tok, depth, lineAt)
	if n != nil {
		n.Line = line
	}
	return n, err
}

func jsonTokenNode(dec *json.Decoder, tok json.Token, depth int, lineAt func(int64) int) (*yaml.Node, error) {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				kn := strNode(k)
				kn.Line = lineAt(dec.InputOffset() - 1)
				v, err := decodeJSONNode(dec, depth+1, lineAt)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, kn, v)
			}
			_, err := dec.Token() // '}'
			return n, err
		case '[':
			n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for dec.More() {
				v, err := decodeJSONNode(dec, depth+1, lineAt)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, v)
			}
			_, err := dec.Token() // ']'
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		return strNode(t), nil
	case json.Number:
		tag := "!!int"
		if _, err := t.Int64(); err != nil {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// strNode is a string scalar. The encoder quotes strings that YAML 1.2
// would read as another type, but not those only YAML 1.1 readers (kubectl)
// would: quote those here so "yes" stays a string.
func strNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if _, ok := yaml11Bool(s); ok || base60RE.MatchString(s) {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// base60RE matches YAML 1.1 sexagesimal numbers such as 1:30.
var base60RE = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)
