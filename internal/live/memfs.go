package live

import (
	"bytes"
	"io/fs"
	"maps"
	"slices"
	"time"
)

// filesFS is a flat read-only directory of files held in memory: a
// ConfigMap's files as graft's container sees them in one mounted
// directory, for the template loader (which lists "." and opens files).
// testing/fstest.MapFS would do, but it is meant for tests.
type filesFS map[string][]byte

func (m filesFS) Open(name string) (fs.File, error) {
	data, ok := m[name]
	if !ok || !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{Reader: bytes.NewReader(data), info: fileInfo{name: name, size: int64(len(data))}}, nil
}

// ReadDir lists the root, the only directory there is.
func (m filesFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name != "." {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	out := make([]fs.DirEntry, 0, len(m))
	for _, n := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fs.FileInfoToDirEntry(fileInfo{name: n, size: int64(len(m[n]))}))
	}
	return out, nil
}

type memFile struct {
	*bytes.Reader
	info fileInfo
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Close() error               { return nil }

type fileInfo struct {
	name string
	size int64
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return 0o444 }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }
