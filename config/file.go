// Package config owns graft's configuration file: its versioned format, its
// defaults, strict parsing whose every error names the file, the line and
// (for a misspelt key) the nearest valid one, a bounded read, and the
// template set a configuration selects. graft serve and the offline
// commands read their configuration here and nowhere else.
package config

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/bounded"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// The file format's version. A file that names neither is read as this
// version (files written before the format was versioned).
const (
	APIVersion = "config.graft.dev/v1alpha1"
	Kind       = "GraftConfiguration"
)

// MaxFileBytes bounds a configuration file; it is a few KiB in practice.
const MaxFileBytes = 1 << 20

// File is one configuration file: the engine's configuration at the top
// level (revision, defaultProfile, profiles, excludedNamespaces), more
// revisions and the tags pointing at them, and graft serve's settings
// under server:.
type File struct {
	// APIVersion is config.graft.dev/v1alpha1; it may be left out.
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind is GraftConfiguration; it may be left out.
	Kind string `json:"kind,omitempty"`
	inject.Config
	// Revisions are served besides the top level's (named by revision).
	Revisions map[string]Revision `json:"revisions,omitempty"`
	// Tags name revisions: graft.dev/rev may name a tag as well.
	Tags map[string]Tag `json:"tags,omitempty"`
	// DefaultRevision is the revision or tag of namespaces without a
	// graft.dev/rev label; empty: the top level's revision.
	DefaultRevision string `json:"defaultRevision,omitempty"`
	// Server holds graft serve's settings; the offline commands read only
	// templatesDir.
	Server Server `json:"server"`
}

// Default is the configuration graft runs with when given no file: the
// built-in profiles (inject.DefaultConfig) and default server settings,
// not yet filled in (see Server.Default).
func Default() File {
	return File{APIVersion: APIVersion, Kind: Kind, Config: inject.DefaultConfig()}
}

// Load reads the configuration file at path, bounded by MaxFileBytes; an
// empty path means no file, and gives Default().
func Load(path string) (File, error) {
	if path == "" {
		return Default(), nil
	}
	data, err := bounded.ReadFile(path, MaxFileBytes)
	if err != nil {
		return File{}, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data)
}

// Parse reads a configuration file's contents strictly: an unknown key, a
// key given twice or a value of the wrong type is an *Error naming name,
// the line and the key's path. A file without profiles gets the built-in
// ones (and their default profile unless it names one). Server settings
// are left unset for the caller to override and then fill in.
func Parse(name string, data []byte) (File, error) {
	var f File
	root, err := decodeStrict(name, data, &f)
	if err != nil {
		return File{}, err
	}
	if isEmptyDocument(root) {
		// What a file holds for a moment while it is rewritten in place
		// (an editor, a shell's >): taking it for the built-in defaults
		// would swap every profile and exclusion for them.
		return File{}, &Error{File: name, Msg: ErrEmpty.Error(), Err: ErrEmpty}
	}
	if f.APIVersion != "" && f.APIVersion != APIVersion {
		return File{}, &Error{File: name, Line: keyLine(root, "apiVersion"), Path: "apiVersion",
			Msg: fmt.Sprintf("%q is not a version this graft reads (want %s)", f.APIVersion, APIVersion)}
	}
	if f.Kind != "" && f.Kind != Kind {
		return File{}, &Error{File: name, Line: keyLine(root, "kind"), Path: "kind",
			Msg: fmt.Sprintf("%q: want %s", f.Kind, Kind)}
	}
	f.APIVersion, f.Kind = APIVersion, Kind
	if len(f.Profiles) == 0 {
		def := inject.DefaultConfig()
		f.Profiles = def.Profiles
		if f.DefaultProfile == "" {
			f.DefaultProfile = def.DefaultProfile
		}
	}
	if err := f.checkRevisions(name, root); err != nil {
		return File{}, err
	}
	return f, nil
}

// ErrEmpty is the message for a file that holds no configuration: no
// YAML document, or only comments, or null. Without --config graft runs
// on the built-in defaults; a file is never taken for them.
var ErrEmpty = errors.New("no configuration: the file is empty (only comments, blank lines or null); " +
	"for the built-in defaults give no --" + names.FlagConfig + ", and rewrite the file by replacing it, not in place")

// Defaulted returns f with every default filled in (the engine's, the
// default revision and the server's) and validated, templates aside.
func (f File) Defaulted() (File, error) {
	var err error
	if f.Config, err = f.Config.Defaulted(); err != nil {
		return f, err
	}
	if f.DefaultRevision == "" {
		f.DefaultRevision = f.topRevision()
	}
	return f, f.Server.Default()
}

// Templates returns the template set a configuration selects: the built-in
// templates, overlaid by dir's (a file of the same name replaces a
// built-in one) when dir is not empty. It is where graft serve (at start
// and on every reload) and the offline commands load templates, so all of
// them refuse a directory `graft templates lint` refuses, with the same
// problem lines (a *templates.SetError).
func Templates(dir string) (*templates.Set, error) {
	set, err := templates.Builtin()
	if err != nil {
		return nil, fmt.Errorf("built-in templates: %w", err)
	}
	if dir == "" {
		return set, nil
	}
	own, err := templates.LoadDir(dir)
	if err != nil {
		return nil, err
	}
	return set.With(own), nil
}

// TemplatesFS is Templates for a directory held in fsys rather than on
// disk (a ConfigMap's files, say); name is what errors call it.
func TemplatesFS(fsys fs.FS, name string) (*templates.Set, error) {
	set, err := templates.Builtin()
	if err != nil {
		return nil, fmt.Errorf("built-in templates: %w", err)
	}
	own, err := templates.LoadFS(fsys)
	if se, ok := errors.AsType[*templates.SetError](err); ok {
		se.Dir = name
	}
	if err != nil {
		return nil, fmt.Errorf("templates %s: %w", name, err)
	}
	return set.With(own), nil
}

// Error is a problem at one place of a configuration file.
type Error struct {
	File string
	// Line is 1-based; 0 when the problem has no single line.
	Line int
	// Path is the key's path from the top of the file, e.g.
	// profiles.enabled.failureMode.
	Path string
	Msg  string
	// Err, when set, is the sentinel the problem is (ErrEmpty); Msg says it.
	Err error
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Path == "" {
		return loc + ": " + e.Msg
	}
	return loc + ": " + e.Path + ": " + e.Msg
}

// IsError reports whether err is a problem in a configuration file.
func IsError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
