// Package manifest reads, edits and writes Kubernetes manifests: streams
// of YAML documents or JSON values, from files, directories or stdin. It
// finds the Pods and Pod templates in them, applies a JSONPatch to a
// document by splicing the change into the document's own text (so
// comments, quoting, key order and layout stay as written), and writes
// the result back, to stdout or atomically to files. It knows nothing of
// the engine: patches come in as RFC 6902 operations.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
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

// Document is one object of the input.
type Document struct {
	source string // file name, or <stdin>
	index  int    // 1-based position in source, counting empty documents
	node   *yaml.Node
	// text is the document's original YAML, when known; it is written back
	// as it is unless changed.
	text    []byte
	changed bool
	json    bool // read from a stream of JSON values
}

// File is one input, a file or stdin, with its documents.
type File struct {
	name string // as messages show it: the path, or <stdin>
	path string // the file --in-place rewrites; "" for stdin
	data []byte // the bytes read
	bom  bool   // data starts with a UTF-8 byte order mark
	docs []*Document
}

// changed reports whether graft changed any of the file's documents.
func (f *File) changed() bool {
	return slices.ContainsFunc(f.docs, func(d *Document) bool { return d.changed })
}

// json reports whether the file was read as a stream of JSON values.
func (f *File) json() bool { return len(f.docs) > 0 && f.docs[0].json }

// AllDocuments returns the documents of files, in order.
func AllDocuments(files []*File) []*Document {
	var docs []*Document
	for _, f := range files {
		docs = append(docs, f.docs...)
	}
	return docs
}

// HasObjects reports whether any document holds something.
func HasObjects(docs []*Document) bool {
	return slices.ContainsFunc(docs, func(d *Document) bool { return d.Root() != nil })
}

// Source is the file the document was read from, or <stdin>.
func (d *Document) Source() string { return d.source }

// Index is the document's 1-based position in its source, counting empty
// documents.
func (d *Document) Index() int { return d.index }

// WrapError returns err as an error that names the document's source and
// position, and what (the object: "Deployment web") unless empty.
func (d *Document) WrapError(what string, err error) error {
	return &docError{source: d.source, index: d.index, what: what, err: err}
}

// Root is the document's top-level node, or nil for an empty document.
func (d *Document) Root() *yaml.Node {
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

// Sources are where ReadInputs reads what is not a local file.
type Sources struct {
	Stdin io.Reader
	// HTTP fetches http and https URLs (nil: a default client); a fetch
	// without a timeout of the client's gets URLTimeout.
	HTTP *http.Client
}

// ReadInputs reads every document of every input, in order. An input is
// a file, a directory (its *.yaml, *.yml and *.json files, sorted by name;
// with recursive, those of its subdirectories too), "-" for stdin, or an
// http or https URL.
func ReadInputs(inputs []string, recursive bool, src Sources) ([]*File, error) {
	if len(inputs) == 0 {
		return nil, errors.New("no input: name files or directories, or - for stdin (also with -f)")
	}
	var files []*File
	stdinRead := false
	for _, in := range inputs {
		if isURL(in) {
			data, err := readURL(src.HTTP, in)
			if err != nil {
				return nil, err
			}
			// Named by its URL; like stdin, it has no path to rewrite.
			f, err := ParseFile(in, data)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
			continue
		}
		paths, err := expandInput(in, recursive)
		if err != nil {
			return nil, plainPathError(err)
		}
		for _, p := range paths {
			name, path := p, p
			var data []byte
			if p == "-" {
				if stdinRead {
					return nil, errors.New("- (stdin) is given twice")
				}
				stdinRead = true
				name, path = "<stdin>", ""
				data, err = bounded.Read(src.Stdin, name, maxManifestBytes)
			} else {
				data, err = bounded.ReadFile(p, maxManifestBytes)
			}
			if err != nil {
				return nil, plainPathError(err)
			}
			f, err := ParseFile(name, data)
			if err != nil {
				return nil, err
			}
			f.path = path
			files = append(files, f)
		}
	}
	return files, nil
}

// ParseFile reads data, named name in messages, as ReadInputs reads a
// file: its documents, and what writing it back needs.
func ParseFile(name string, data []byte) (*File, error) {
	docs, err := parseDocuments(name, data)
	if err != nil {
		return nil, err
	}
	return &File{name: name, data: data, bom: bytes.HasPrefix(data, utf8BOM), docs: docs}, nil
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
func parseDocuments(source string, data []byte) ([]*Document, error) {
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
	var docs []*Document
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
		doc := &Document{source: source, index: i, node: &n}
		// Check the document converts to JSON (duplicate keys, merge keys,
		// .inf...) now, so later steps cannot meet a broken document.
		if err := checkExpansion(&n); err != nil {
			return nil, &docError{source: source, index: i, err: fmt.Errorf("invalid YAML: %w", err)}
		}
		if _, err := NodeJSON(&n); err != nil {
			return nil, &docError{source: source, index: i, err: fmt.Errorf("invalid YAML: %w", err)}
		}
		if err := checkYAML11(&n); err != nil {
			return nil, &docError{source: source, index: i, err: err}
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
func parseJSONStream(source string, data []byte) ([]*Document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []*Document
	for i := 1; ; i++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return docs, nil
		}
		if err == nil {
			var n *yaml.Node
			if n, err = jsonNode(raw); err == nil {
				docs = append(docs, &Document{source: source, index: i, json: true, node: &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}}})
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
