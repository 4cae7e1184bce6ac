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
	"cmp"
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
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/yamlerr"
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

// WrapError returns err as an error that names the document's source,
// position and first line, and what (the object: "Deployment web") unless
// empty.
func (d *Document) WrapError(what string, err error) error {
	return d.WrapErrorAt(d.Root(), what, err)
}

// WrapErrorAt is WrapError naming the line of at (the object or Pod the
// error is about) rather than the document's first.
func (d *Document) WrapErrorAt(at *yaml.Node, what string, err error) error {
	line := 0
	if at != nil {
		line = at.Line
	}
	return &docError{source: d.source, index: d.index, line: line, what: what, err: err}
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

// docError is a problem with one document; it names file, line and
// position: "app.yaml:14: document 3 (Deployment web): ...", the file and
// line as compilers write them.
type docError struct {
	source string
	index  int
	line   int    // 1-based, in the file; 0 when unknown
	what   string // "Deployment web", when known
	err    error
}

func (e *docError) Error() string {
	var b strings.Builder
	b.WriteString(e.source)
	if e.line > 0 {
		fmt.Fprintf(&b, ":%d", e.line)
	}
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
// http or https URL. It reads them all before it fails, and its error has
// every input's problems (JoinProblems).
func ReadInputs(inputs []string, recursive bool, src Sources) ([]*File, error) {
	if len(inputs) == 0 {
		return nil, errors.New("no input: name files or directories, or - for stdin (also with -" + names.FlagFilenameShort + ")")
	}
	var files []*File
	var errs []error
	stdinRead := false
	for _, in := range inputs {
		if isURL(in) {
			data, err := readURL(src.HTTP, in)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			// Named by its URL; like stdin, it has no path to rewrite.
			f, err := ParseFile(in, data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			files = append(files, f)
			continue
		}
		paths, err := expandInput(in, recursive)
		if err != nil {
			errs = append(errs, plainPathError(err))
			continue
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
				errs = append(errs, plainPathError(err))
				continue
			}
			f, err := ParseFile(name, data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			f.path = path
			files = append(files, f)
		}
	}
	// Every file is read, so one run reports the problems of all.
	if err := JoinProblems(errs...); err != nil {
		return nil, err
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
			hint = " (-" + names.FlagRecursiveShort + " reads subdirectories too)"
		}
		return nil, fmt.Errorf("%s: no .yaml, .yml or .json files%s", in, hint)
	}
	return files, nil
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// parseDocuments splits data into documents: a stream of JSON values, or
// multi-document YAML (which also covers a single JSON object). A file
// named .json, or one that starts as JSON and is not YAML either, is
// reported as JSON. After a document that is not valid YAML it reads on
// from the next "---", so one run reports every broken document.
func parseDocuments(source string, data []byte) ([]*Document, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[' || isJSONName(source)) {
		docs, jsonErr := parseJSONStream(source, data)
		switch {
		case jsonErr == nil:
			return docs, nil
		case len(docs) > 0 || isJSONName(source):
			// The stream started as JSON and broke later, or is named
			// JSON: that is the error.
			return nil, jsonErr
		}
		// Not JSON from the start: maybe a YAML flow mapping. If it is
		// not YAML either, it was meant as JSON.
		if docs, err := parseYAML(source, data); err == nil {
			return docs, nil
		}
		return nil, jsonErr
	}
	return parseYAML(source, data)
}

// isJSONName reports a file named as JSON.
func isJSONName(source string) bool { return strings.EqualFold(filepath.Ext(source), ".json") }

// parseYAML reads multi-document YAML.
func parseYAML(source string, data []byte) ([]*Document, error) {
	var docs []*Document
	var errs []error
	// start is where the decoder began reading, and startLine its line:
	// after a syntax error it starts again at the next document marker.
	start, startLine, index := 0, 0, 0
	for start < len(data) {
		dec := yaml.NewDecoder(bytes.NewReader(data[start:]))
		restart := -1
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if err == io.EOF {
				break
			}
			index++
			if err != nil {
				line, problem := yamlerr.Locate(data[start:], err)
				if line > 0 {
					line += startLine
				}
				errs = append(errs, &docError{source: source, index: index, line: line, err: errors.New("invalid YAML: " + problem)})
				restart = nextDocumentMarker(data, start, line)
				break
			}
			shiftLines(&n, startLine)
			if line, err := checkDocument(&n); err != nil {
				errs = append(errs, &docError{source: source, index: index, line: cmp.Or(line, rootLine(&n)), err: err})
				continue
			}
			docs = append(docs, &Document{source: source, index: index, node: &n})
		}
		if restart < 0 {
			break
		}
		startLine += bytes.Count(data[start:restart], []byte("\n"))
		start = restart
	}
	if err := JoinProblems(errs...); err != nil {
		return nil, err
	}
	if texts := splitYAMLText(data); len(texts) == len(docs) {
		for i, d := range docs {
			d.text = texts[i]
		}
	}
	return docs, nil
}

// checkDocument checks a document converts to JSON (no duplicate keys,
// merge keys, .inf...) and means to kubectl what it says, so later steps
// cannot meet a broken document. It returns the problem's line when it
// is known.
func checkDocument(n *yaml.Node) (int, error) {
	if err := checkExpansion(n); err != nil {
		return 0, fmt.Errorf("invalid YAML: %w", err)
	}
	var at *atError
	if _, err := NodeJSON(n); err != nil {
		if errors.As(err, &at) {
			return at.line, fmt.Errorf("invalid YAML: %w", at.err)
		}
		return 0, fmt.Errorf("invalid YAML: %w", err)
	}
	if err := checkYAML11(n); err != nil {
		if errors.As(err, &at) {
			return at.line, at.err
		}
		return 0, err
	}
	return 0, nil
}

// nextDocumentMarker is the offset of the first "---" line of data after
// line (1-based, in data; 0: after start), or -1.
func nextDocumentMarker(data []byte, start, line int) int {
	off, l := 0, 1
	if line > 0 {
		for off < len(data) && l <= line {
			i := bytes.IndexByte(data[off:], '\n')
			if i < 0 {
				return -1
			}
			off += i + 1
			l++
		}
	} else {
		off = start
		// Skip the line the decoder began on: it may be the marker.
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			off += i + 1
		} else {
			return -1
		}
	}
	for off < len(data) {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		if isDocumentMarker(data[off:next]) {
			return off
		}
		off = next
	}
	return -1
}

// shiftLines adds lines to the line of every node under n: a decoder that
// started again mid-file counts from its start.
func shiftLines(n *yaml.Node, lines int) {
	if lines == 0 || n == nil {
		return
	}
	n.Line += lines
	for _, c := range n.Content {
		shiftLines(c, lines)
	}
}

// rootLine is the line of a document's first node, 0 if it has none.
func rootLine(n *yaml.Node) int {
	if len(n.Content) > 0 {
		return n.Content[0].Line
	}
	return n.Line
}

// parseJSONStream reads concatenated JSON values (after leading white
// space). On error it returns the documents read so far with the error,
// which names the line and column.
func parseJSONStream(source string, data []byte) ([]*Document, error) {
	lines := newLineIndex(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []*Document
	for i := 1; ; i++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return docs, nil
		}
		end := int(dec.InputOffset())
		begin := end - len(raw)
		if err == nil {
			var n *yaml.Node
			if n, err = jsonNodeAt(raw, func(off int64) int { return lines.line(begin + int(off)) }); err == nil {
				docs = append(docs, &Document{source: source, index: i, json: true, node: &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}}})
				continue
			}
		}
		// Where it went wrong: the byte a syntax error stopped at, the
		// last of the input when it ended too soon, else the value's end.
		at := end
		var syn *json.SyntaxError
		switch {
		case errors.As(err, &syn):
			at = max(int(syn.Offset)-1, 0)
		case errors.Is(err, io.ErrUnexpectedEOF):
			at = max(len(bytes.TrimRight(data, " \t\r\n"))-1, 0)
		}
		line, col := lines.position(at)
		return docs, &docError{source: source, index: i, line: line, err: fmt.Errorf("invalid JSON: column %d: %w", col, err)}
	}
}

// lineIndex turns byte offsets into 1-based lines and columns.
type lineIndex struct{ starts []int }

func newLineIndex(data []byte) *lineIndex {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return &lineIndex{starts: starts}
}

func (x *lineIndex) line(off int) int {
	l, _ := x.position(off)
	return l
}

// position is the line and column (both 1-based) of offset off.
func (x *lineIndex) position(off int) (line, col int) {
	i, found := slices.BinarySearch(x.starts, off)
	if !found {
		i--
	}
	return i + 1, off - x.starts[i] + 1
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
