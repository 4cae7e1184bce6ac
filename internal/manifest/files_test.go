package manifest

import (
	"os"
	"path/filepath"
	"testing"
)

// writeFiles stages every file before it replaces any: one that cannot be
// staged leaves all as they were, and no temporary file behind.
func TestWriteFilesAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(a, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := writeFiles([]fileWrite{
		{path: a, data: []byte("new\n"), old: []byte("old\n")},
		{path: filepath.Join(dir, "missing", "b.yaml"), data: []byte("new\n")},
	})
	if err == nil {
		t.Fatal("no error for a file in a missing directory")
	}
	if got, _ := os.ReadFile(a); string(got) != "old\n" {
		t.Errorf("a.yaml = %q, want it untouched", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}

	// And when all can be staged, all are replaced, keeping permissions.
	b := filepath.Join(dir, "b.yaml")
	if err := writeFiles([]fileWrite{{path: a, data: []byte("new\n")}, {path: b, data: []byte("b\n")}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(a); string(got) != "new\n" {
		t.Errorf("a.yaml = %q", got)
	}
	if st, _ := os.Stat(a); st.Mode().Perm() != 0o600 {
		t.Errorf("a.yaml mode %v, want 0600 as before", st.Mode().Perm())
	}
	if got, _ := os.ReadFile(b); string(got) != "b\n" {
		t.Errorf("b.yaml = %q", got)
	}
}

// A failed commit puts back what the earlier ones replaced.
func TestRestorePutsBackOldContent(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(a, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := restore([]*staged{{fileWrite: fileWrite{path: a, old: []byte("old\n")}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(a); string(got) != "old\n" {
		t.Errorf("a.yaml = %q, want its old content", got)
	}
}
