// Package bounded reads whole files and streams with a size limit, so no
// input graft is handed (a config file, a manifest, a certificate) can make
// it read without end.
package bounded

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrTooLarge is returned for input over the limit.
var ErrTooLarge = errors.New("too large")

// ReadFile reads path whole, refusing a file larger than limit bytes
// without reading past limit+1. Errors name the path once ("app.yaml: no
// such file or directory"), not the operation.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, plainPathError(err)
	}
	defer f.Close()
	return Read(f, path, limit)
}

// ReadFS is ReadFile for a file of fsys.
func ReadFS(fsys fs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, plainPathError(err)
	}
	defer f.Close()
	return Read(f, name, limit)
}

// Read reads r to its end, refusing more than limit bytes; name is used in
// errors.
func Read(r io.Reader, name string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w (over %d bytes)", name, ErrTooLarge, limit)
	}
	return data, nil
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
