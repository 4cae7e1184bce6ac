package webhook

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/inject"
)

func TestParseConfig(t *testing.T) {
	fc, err := ParseConfig([]byte(`
defaultProfile: mesh
profiles:
  mesh: {templates: [agent], failureMode: deny}
excludedNamespaces: [kube-system, graft-system]
server:
  addr: ":9443"
  budget: 150ms
  timeoutMargin: 1s
  maxBodyBytes: 1048576
  maxInFlight: 64
  tlsMinVersion: "1.3"
  idleTimeout: 30s
  shutdownGrace: 5s
  logLevel: debug
`))
	if err != nil {
		t.Fatal(err)
	}
	if fc.DefaultProfile != "mesh" || fc.Profiles["mesh"].FailureMode != inject.FailDeny ||
		len(fc.ExcludedNamespaces) != 2 {
		t.Errorf("engine config: %+v", fc.Config)
	}
	s := fc.Server
	if err := s.defaults(); err != nil {
		t.Fatal(err)
	}
	want := Settings{
		Addr: ":9443", AdminAddr: DefaultAdminAddr, Budget: Duration{150 * time.Millisecond},
		TimeoutMargin: Duration{time.Second}, MaxBodyBytes: 1 << 20, MaxInFlight: 64, TLSMinVersion: "1.3",
		ReadTimeout: Duration{DefaultReadTimeout}, WriteTimeout: Duration{DefaultWriteTimeout},
		IdleTimeout: Duration{30 * time.Second}, ShutdownGrace: Duration{5 * time.Second}, LogLevel: "debug",
	}
	if s != want {
		t.Errorf("settings\n got %+v\nwant %+v", s, want)
	}
}

func TestParseConfigDefaults(t *testing.T) {
	fc, err := ParseConfig([]byte("server: {addr: ':1'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	def := inject.DefaultConfig()
	if fc.DefaultProfile != def.DefaultProfile || len(fc.Profiles) != len(def.Profiles) {
		t.Errorf("without profiles the built-in ones apply; got %+v", fc.Config)
	}
	s := fc.Server
	if err := s.defaults(); err != nil {
		t.Fatal(err)
	}
	if s.MaxBodyBytes != 7<<20 || s.Budget.Duration != 200*time.Millisecond || s.TLSMinVersion != "1.2" ||
		s.AdminAddr != ":8080" || s.LogLevel != "info" {
		t.Errorf("defaults: %+v", s)
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown top-level field", "profile: {}\n", "unknown field"},
		{"unknown server field", "server: {port: 8443}\n", "unknown field"},
		{"unknown profile field", "profiles: {a: {templates: [agent], color: red}}\n", "unknown field"},
		{"duplicate key", "server: {addr: ':1', addr: ':2'}\n", "already set"},
		{"duration as number", "server: {budget: 200}\n", "duration"},
		{"bad duration", "server: {budget: soon}\n", "duration"},
		{"not yaml", "server: [\n", "yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestSettingsValidation(t *testing.T) {
	cases := []struct {
		name string
		s    Settings
		want string
	}{
		{"tls 1.1", Settings{TLSMinVersion: "1.1"}, "tlsMinVersion"},
		{"negative budget", Settings{Budget: Duration{-time.Second}}, "budget"},
		{"negative body", Settings{MaxBodyBytes: -1}, "maxBodyBytes"},
		{"negative in-flight", Settings{MaxInFlight: -1}, "maxInFlight"},
		{"bad log level", Settings{LogLevel: "loud"}, "logLevel"},
		{"cert without key", Settings{TLSCert: "c.pem"}, "tlsKey"},
		{"key without cert", Settings{TLSKey: "k.pem"}, "tlsCert"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.defaults()
			if !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrSettings mentioning %q", err, tc.want)
			}
		})
	}
}

// TestFlagsWinOverFile: the override runs after the file on every load.
func TestFlagsWinOverFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graft.yaml")
	if err := os.WriteFile(path, []byte("server: {addr: ':1111', budget: 50ms}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := load(path, func(s *Settings) { s.Addr = ":2222" })
	if err != nil {
		t.Fatal(err)
	}
	if l.file.Server.Addr != ":2222" || l.file.Server.Budget.Duration != 50*time.Millisecond {
		t.Errorf("settings %+v", l.file.Server)
	}
	if _, err := load(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil {
		t.Error("missing config file accepted")
	}
	if _, err := load("", func(s *Settings) { s.TemplatesDir = t.TempDir() }); err == nil {
		t.Error("empty templates dir accepted")
	}
}
