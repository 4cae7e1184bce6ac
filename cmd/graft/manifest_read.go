package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/graftdev/graft/internal/bounded"
)

// maxManifestBytes bounds one input file (the API server takes objects up
// to 3 MiB; a file of many is allowed more).
const maxManifestBytes = 32 << 20

// document is one object of the input.
type document struct {
	source string // file name, or <stdin>
	index  int    // 1-based position in source, counting empty documents
	node   *yaml.Node
	// text is the document's original YAML, when known; it is written back
	// as it is unless changed.
	text    []byte
	changed bool
	json    bool // read from a stream of JSON values
}

// inputFile is one input, a file or stdin, with its documents.
type inputFile struct {
	name string // as messages show it: the path, or <stdin>
	path string // the file --in-place rewrites; "" for stdin
	data []byte // the bytes read
	bom  bool   // data starts with a UTF-8 byte order mark
	docs []*document
}

// changed reports whether graft changed any of the file's documents.
func (f *inputFile) changed() bool {
	return slices.ContainsFunc(f.docs, func(d *document) bool { return d.changed })
}

// json reports whether the file was read as a stream of JSON values.
func (f *inputFile) json() bool { return len(f.docs) > 0 && f.docs[0].json }

// allDocuments returns the documents of files, in order.
func allDocuments(files []*inputFile) []*document {
	var docs []*document
	for _, f := range files {
		docs = append(docs, f.docs...)
	}
	return docs
}

// hasObjects reports whether any document holds something.
func hasObjects(docs []*document) bool {
	return slices.ContainsFunc(docs, func(d *document) bool { return d.root() != nil })
}

// root is the document's top-level node, or nil for an empty document.
func (d *document) root() *yaml.Node {
	if d.node == nil || len(d.node.Content) == 0 {
		return nil
	}
	r := d.node.Content[0]
	if r.Kind == yaml.ScalarNode && r.ShortTag() == "!!null" {
		return nil
	}
	return r
}

// docError is a problem with one document; it names file and position.
type docError struct {
	source string
	index  int
	what   string // "Deployment web", when known
	err    error
}

func (e *docError) Error() string {
	var b strings.Builder
	b.WriteString(e.source)
	if e.index > 0 {
		fmt.Fprintf(&b, ": document %d", e.index)
	}
	if e.what != "" {
		fmt.Fprintf(&b, " (%s)", e.what)
	}
	b.WriteString(": ")
	b.WriteString(e.err.Error())
	return b.String()
}

func (e *docError) Unwrap() error { return e.err }

// readInputs reads every document of every input, in order. An input is
// a file, a directory (its *.yaml, *.yml and *.json files, sorted by name;
// with recursive, those of its subdirectories too) or "-" for stdin.
func readInputs(inputs []string, recursive bool, stdin io.Reader) ([]*inputFile, error) {
	if len(inputs) == 0 {
		return nil, errors.New("no input: name files or directories, or - for stdin (also with -f)")
	}
	var files []*inputFile
	stdinRead := false
	for _, in := range inputs {
		paths, err := expandInput(in, recursive)
		if err != nil {
			return nil, plainPathError(err)
		}
		for _, p := range paths {
			f := &inputFile{name: p, path: p}
			if p == "-" {
				if stdinRead {
					return nil, errors.New("- (stdin) is given twice")
				}
				stdinRead = true
				f.name, f.path = "<stdin>", ""
				f.data, err = bounded.Read(stdin, f.name, maxManifestBytes)
			} else {
				f.data, err = bounded.ReadFile(p, maxManifestBytes)
			}
			if err != nil {
				return nil, plainPathError(err)
			}
			f.bom = bytes.HasPrefix(f.data, utf8BOM)
			if f.docs, err = parseDocuments(f.name, f.data); err != nil {
				return nil, err
			}
			files = append(files, f)
		}
	}
	return files, nil
}

func expandInput(in string, recursive bool) ([]string, error) {
	if in == "-" {
		return []string{in}, nil
	}
	st, err := os.Stat(in)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{in}, nil
	}
	var files []string
	add := func(path string, e fs.DirEntry) {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			if e.Type()&fs.ModeSymlink != 0 {
				if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
					files = append(files, path)
				}
			} else if e.Type().IsRegular() {
				files = append(files, path)
			}
		}
	}
	if recursive {
		// In lexical order; symbolic links to directories are not followed
		// (but a directory named on the command line is).
		err = filepath.WalkDir(in+string(filepath.Separator), func(path string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				add(path, e)
			}
			return err
		})
	} else {
		var entries []fs.DirEntry
		entries, err = os.ReadDir(in)
		for _, e := range entries {
			add(filepath.Join(in, e.Name()), e)
		}
	}
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		hint := ""
		if !recursive {
			hint = " (-R reads subdirectories too)"
		}
		return nil, fmt.Errorf("%s: no .yaml, .yml or .json files%s", in, hint)
	}
	return files, nil
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// parseDocuments splits data into documents: a stream of JSON values, or
// multi-document YAML (which also covers a single JSON object).
func parseDocuments(source string, data []byte) ([]*document, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		if docs, err := parseJSONStream(source, t); err == nil {
			return docs, nil
		} else if len(docs) > 0 {
			// The stream started as JSON and broke later: that is the error.
			return nil, err
		}
		// Not JSON from the start: maybe a YAML flow mapping; let YAML say.
	}
	var docs []*document
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 1; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &docError{source: source, index: i, err: fmt.Errorf("invalid YAML: %w", err)}
		}
		doc := &document{source: source, index: i, node: &n}
		// Check the document converts to JSON (duplicate keys, merge keys,
		// .inf...) now, so later steps cannot meet a broken document.
		if err := checkExpansion(&n); err != nil {
			return nil, &docError{source: source, index: i, err: fmt.Errorf("invalid YAML: %w", err)}
		}
		if _, err := nodeJSON(&n); err != nil {
			return nil, &docError{source: source, index: i, err: fmt.Errorf("invalid YAML: %w", err)}
		}
		docs = append(docs, doc)
	}
	if texts := splitYAMLText(data); len(texts) == len(docs) {
		for i, d := range docs {
			d.text = texts[i]
		}
	}
	return docs, nil
}

// parseJSONStream reads concatenated JSON values. On error it returns the
// documents read so far with the error.
func parseJSONStream(source string, data []byte) ([]*document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []*document
	for i := 1; ; i++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return docs, nil
		}
		if err == nil {
			var n *yaml.Node
			if n, err = jsonNode(raw); err == nil {
				docs = append(docs, &document{source: source, index: i, json: true, node: &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}}})
				continue
			}
		}
		return docs, &docError{source: source, index: i, err: fmt.Errorf("invalid JSON: %w", err)}
	}
}

// plainPathError turns "open app.yaml: no such file" into "app.yaml: no
// such file": the operation is noise to a user.
func plainPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}
