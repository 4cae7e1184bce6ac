package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

// encodeDocuments renders docs as multi-document YAML or as a stream of
// indented JSON objects (which graft reads back). Empty documents are
// dropped.
func encodeDocuments(docs []*document, format string) ([]byte, error) {
	var buf bytes.Buffer
	switch format {
	case "yaml":
		first := true
		for _, d := range docs {
			if d.root() == nil {
				continue
			}
			if d.text != nil && !d.changed {
				if !first && !isDocumentMarker(d.text) {
					buf.WriteString("---\n")
				}
				buf.Write(d.text)
				if !bytes.HasSuffix(d.text, []byte("\n")) {
					buf.WriteByte('\n')
				}
			} else {
				if !first {
					buf.WriteString("---\n")
				}
				enc := yaml.NewEncoder(&buf)
				enc.SetIndent(2)
				if err := enc.Encode(d.node); err != nil {
					return nil, &docError{source: d.source, index: d.index, err: fmt.Errorf("encode YAML: %w", err)}
				}
				if err := enc.Close(); err != nil {
					return nil, err
				}
			}
			first = false
		}
	case "json":
		for _, d := range docs {
			if d.root() == nil {
				continue
			}
			js, err := nodeJSON(d.node)
			if err == nil {
				err = json.Indent(&buf, js, "", "  ")
			}
			if err != nil {
				return nil, &docError{source: d.source, index: d.index, err: fmt.Errorf("encode JSON: %w", err)}
			}
			buf.WriteByte('\n')
		}
	default:
		return nil, fmt.Errorf("output format %q: want yaml or json", format)
	}
	return buf.Bytes(), nil
}

func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return fmt.Errorf("-o %s: want one of %v", format, allowed)
}
