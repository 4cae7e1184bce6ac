package bounded

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestRead(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		limit   int64
		wantErr error
	}{
		{"empty", "", 4, nil},
		{"under", "abc", 4, nil},
		{"at the limit", "abcd", 4, nil},
		{"one over", "abcde", 4, ErrTooLarge},
		{"far over", strings.Repeat("x", 1<<20), 4, ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tc.in), "in", tc.limit)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if err == nil && string(got) != tc.in {
				t.Errorf("read %q, want %q", got, tc.in)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "in: ") {
				t.Errorf("error %q does not start with the name", err)
			}
		})
	}
}

// countingReader fails the test if more than max bytes are read from it.
type countingReader struct {
	t   *testing.T
	n   int64
	max int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	r.n += int64(len(p))
	if r.n > r.max {
		r.t.Fatalf("read %d bytes, more than %d", r.n, r.max)
	}
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestReadStopsAtLimit: an endless stream is read only up to the limit.
func TestReadStopsAtLimit(t *testing.T) {
	_, err := Read(&countingReader{t: t, max: 1 << 20}, "endless", 1000)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("error %v, want ErrTooLarge", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(path, []byte("a: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(path, 100); err != nil || string(got) != "a: 1\n" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	if _, err := ReadFile(path, 2); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	_, err := ReadFile(missing, 100)
	if !errors.Is(err, fs.ErrNotExist) || err.Error() != missing+": no such file or directory" {
		t.Errorf("missing file: %v", err)
	}
}

func TestReadFS(t *testing.T) {
	fsys := fstest.MapFS{"t.yaml": {Data: []byte("name: t\n")}}
	if got, err := ReadFS(fsys, "t.yaml", 100); err != nil || string(got) != "name: t\n" {
		t.Fatalf("ReadFS = %q, %v", got, err)
	}
	if _, err := ReadFS(fsys, "t.yaml", 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := ReadFS(fsys, "nope.yaml", 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
