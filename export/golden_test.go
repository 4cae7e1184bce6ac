package export

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

var update = flag.Bool("update", false, "rewrite export/testdata/golden/*.yaml from the exporter's output")

// TestGoldenBuiltinProfiles pins the policies of every built-in profile:
// a change to the compiler or a built-in template shows as a diff here.
func TestGoldenBuiltinProfiles(t *testing.T) {
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cfg := inject.DefaultConfig()
	dir := filepath.Join("testdata", "golden")
	profiles := slices.Sorted(maps.Keys(cfg.Profiles))
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".yaml"); !slices.Contains(profiles, name) {
			if *update {
				os.Remove(f)
				continue
			}
			t.Errorf("%s: golden for no built-in profile (run go test ./export -run Golden -update)", f)
		}
	}
	for _, name := range profiles {
		t.Run(name, func(t *testing.T) {
			pols, err := Export(cfg, set, name)
			if err != nil {
				t.Fatalf("export: %v", err)
			}
			got, err := pols.YAML()
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Export(cfg, set, name)
			if y, _ := again.YAML(); !bytes.Equal(y, got) {
				t.Fatal("two exports differ")
			}
			path := filepath.Join(dir, name+".yaml")
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("missing golden (run go test ./export -run Golden -update): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("export differs from %s (inspect, then run with -update)", path)
			}
		})
	}
}
