package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

// Encode renders the documents of every file as one stream, in
// order: what stdout and --output-file get.
func Encode(files []*File, format string) ([]byte, error) {
	var buf bytes.Buffer
	for i, f := range files {
		b, err := encodeFile(f, format)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b = bytes.TrimPrefix(b, utf8BOM)
			if format == "yaml" && len(b) > 0 && buf.Len() > 0 {
				separate(&buf, b)
			}
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// encodeFile renders one file's documents in format. As YAML, a file
// graft did not change is its bytes as read, and one it changed differs
// only in what graft changed.
func encodeFile(f *File, format string) ([]byte, error) {
	if format == "yaml" && !f.json() && !f.changed() {
		return f.data, nil
	}
	var buf bytes.Buffer
	if format == "yaml" && f.bom {
		buf.Write(utf8BOM)
	}
	if err := encodeDocuments(&buf, f.docs, format); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeDocuments renders docs as multi-document YAML or as a stream of
// indented JSON objects (which graft reads back). In YAML, a document
// with text is written as its text, separators and comments included;
// one without (read from JSON) by the YAML encoder. Empty documents have
// no JSON and are left out of it.
func encodeDocuments(buf *bytes.Buffer, docs []*Document, format string) error {
	switch format {
	case "yaml":
		start := buf.Len()
		for _, d := range docs {
			if d.text != nil {
				buf.Write(d.text)
				continue
			}
			if d.Root() == nil {
				continue
			}
			if buf.Len() > start {
				separate(buf, nil)
			}
			enc := yaml.NewEncoder(buf)
			enc.SetIndent(2)
			if err := enc.Encode(d.node); err != nil {
				return &docError{source: d.source, index: d.index, err: fmt.Errorf("encode YAML: %w", err)}
			}
			if err := enc.Close(); err != nil {
				return err
			}
		}
	case "json":
		for _, d := range docs {
			if d.Root() == nil {
				continue
			}
			js, err := NodeJSON(d.node)
			if err == nil {
				err = json.Indent(buf, js, "", "  ")
			}
			if err != nil {
				return &docError{source: d.source, index: d.index, err: fmt.Errorf("encode JSON: %w", err)}
			}
			buf.WriteByte('\n')
		}
	default:
		return fmt.Errorf("output format %q: want yaml or json", format)
	}
	return nil
}

// separate ends what buf holds so that next starts a new document: a line
// break if missing, and a "---" line unless next begins with one.
func separate(buf *bytes.Buffer, next []byte) {
	nl := "\n"
	if bytes.Contains(next, []byte("\r\n")) {
		nl = "\r\n"
	}
	if !bytes.HasSuffix(buf.Bytes(), []byte("\n")) {
		buf.WriteString(nl)
	}
	if !startsWithMarker(next) {
		buf.WriteString("---" + nl)
	}
}

// startsWithMarker reports whether the first line of text that is not
// blank or a comment is a "---" line.
func startsWithMarker(text []byte) bool {
	for len(text) > 0 {
		line, rest, _ := bytes.Cut(text, []byte("\n"))
		if isDocumentMarker(line) {
			return true
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			return false
		}
		text = rest
	}
	return false
}
