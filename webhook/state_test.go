package webhook

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/graftdev/graft/config"
)

// TestFlagsWinOverFile: the override runs after the file on every load.
func TestFlagsWinOverFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graft.yaml")
	if err := os.WriteFile(path, []byte("server: {addr: ':1111', budget: 50ms}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := load(path, func(s *config.Server) { s.Addr = ":2222" })
	if err != nil {
		t.Fatal(err)
	}
	if l.file.Server.Addr != ":2222" || l.file.Server.Budget.Duration != 50*time.Millisecond {
		t.Errorf("settings %+v", l.file.Server)
	}
	if _, err := load(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil {
		t.Error("missing config file accepted")
	}
	if _, err := load("", func(s *config.Server) { s.TemplatesDir = t.TempDir() }); err == nil {
		t.Error("empty templates dir accepted")
	}
	if _, err := load("", func(s *config.Server) { s.TLSMinVersion = "1.0" }); err == nil {
		t.Error("an invalid flag value was accepted")
	}
}
