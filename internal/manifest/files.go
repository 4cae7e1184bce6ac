package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/graftdev/graft/internal/names"
)

// CheckInPlace refuses inputs that WriteInPlace cannot rewrite: stdin, and
// a file named twice. It resolves each file's path, so that the rewrite
// replaces the file a symbolic link points at rather than the link.
func CheckInPlace(files []*File) error {
	seen := map[string]bool{}
	for _, f := range files {
		if f.path == "" {
			return fmt.Errorf("--%s cannot rewrite %s", names.FlagInPlace, f.name)
		}
		real, err := filepath.EvalSymlinks(f.path)
		if err != nil {
			return plainPathError(err)
		}
		if abs, err := filepath.Abs(real); err == nil {
			real = abs
		}
		if seen[real] {
			return fmt.Errorf("--%s: %s is given twice", names.FlagInPlace, f.path)
		}
		seen[real] = true
		f.path = real
	}
	return nil
}

// WriteInPlace rewrites the files graft changed, each in the format it
// was read in, all or none (see writeFiles).
func WriteInPlace(files []*File) error {
	var writes []fileWrite
	for _, f := range files {
		if !f.changed() {
			continue
		}
		format := "yaml"
		if f.json() {
			format = "json"
		}
		out, err := encodeFile(f, format)
		if err != nil {
			return err
		}
		writes = append(writes, fileWrite{path: f.path, data: out, old: f.data})
	}
	return writeFiles(writes)
}

// WriteFile replaces the file at path with data atomically: a failure
// leaves it as it was.
func WriteFile(path string, data []byte) error {
	return writeFiles([]fileWrite{{path: path, data: data}})
}

// fileWrite is a file's new content, and what it held, if it matters.
type fileWrite struct {
	path string
	data []byte
	old  []byte // put back if a later write of the same run fails
}

// staged is a fileWrite whose content waits beside its file.
type staged struct {
	fileWrite
	tmp string
}

// stage writes w's data to a temporary file in its file's directory (so
// that the rename is atomic), with the file's permissions if it exists.
func stage(w fileWrite) (*staged, error) {
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(w.path); err == nil {
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file", w.path)
		}
		mode = st.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, plainPathError(err)
	}
	f, err := os.CreateTemp(filepath.Dir(w.path), "."+filepath.Base(w.path)+".graft-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the temporary file's name means nothing to a user
		}
		return nil, fmt.Errorf("%s: %w", w.path, err)
	}
	_, err = f.Write(w.data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), mode)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("%s: %w", w.path, err)
	}
	return &staged{w, f.Name()}, nil
}

// writeFiles replaces each file with its new content, all or none: each
// is first staged beside its file; only when all are staged are they
// renamed over their files, and if a rename fails, the files already
// replaced get their old content back. No file ever holds half a
// manifest.
func writeFiles(writes []fileWrite) error {
	var all []*staged
	discard := func() {
		for _, s := range all {
			_ = os.Remove(s.tmp) // gone already if renamed
		}
	}
	for _, w := range writes {
		s, err := stage(w)
		if err != nil {
			discard()
			return err
		}
		all = append(all, s)
	}
	for i, s := range all {
		if err := os.Rename(s.tmp, s.path); err != nil {
			discard()
			return errors.Join(fmt.Errorf("%s: %w", s.path, err), restore(all[:i]))
		}
	}
	return nil
}

// restore puts back what the committed writes replaced.
func restore(done []*staged) error {
	var errs []error
	for _, s := range done {
		back, err := stage(fileWrite{path: s.path, data: s.old})
		if err == nil {
			err = os.Rename(back.tmp, s.path)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s could not be restored: %w", s.path, err))
		}
	}
	return errors.Join(errs...)
}
