package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/bounded"
	"github.com/graftdev/graft/templates/linttest"
)

func TestParse(t *testing.T) {
	f, err := Parse("graft.yaml", []byte(`
apiVersion: config.graft.dev/v1alpha1
kind: GraftConfiguration
defaultProfile: mesh
profiles:
  mesh: {templates: [otel-agent], failureMode: deny}
excludedNamespaces: [kube-system, graft-system]
server:
  addr: ":9443"
  budget: 150ms
  timeoutMargin: 1s
  maxBodyBytes: 1048576
  maxBodyBytesInFlight: 16777216
  maxConns: 100
  maxConnsPerAddress: 10
  handshakeTimeout: 2s
  firstRequestTimeout: 20s
  metricsOnWebhookPort: true
  maxInFlight: 64
  tlsMinVersion: "1.3"
  idleTimeout: 30s
  maxConnAge: 1m
  maxConnRequests: 50
  drainDelay: 3s
  shutdownGrace: 5s
  logLevel: debug
`))
	if err != nil {
		t.Fatal(err)
	}
	if f.DefaultProfile != "mesh" || f.Profiles["mesh"].FailureMode != inject.FailDeny ||
		len(f.ExcludedNamespaces) != 2 || len(f.Profiles) != 1 {
		t.Errorf("engine config: %+v", f.Config)
	}
	s := f.Server
	if err := s.Default(); err != nil {
		t.Fatal(err)
	}
	want := Server{
		Addr: ":9443", AdminAddr: DefaultAdminAddr, Budget: Duration{150 * time.Millisecond},
		TimeoutMargin: Duration{time.Second}, MaxBodyBytes: 1 << 20, MaxInFlight: 64, TLSMinVersion: "1.3",
		ReadTimeout: Duration{DefaultReadTimeout}, WriteTimeout: Duration{DefaultWriteTimeout},
		IdleTimeout: Duration{30 * time.Second}, MaxConnAge: Duration{time.Minute}, MaxConnRequests: 50,
		DrainDelay: Duration{3 * time.Second}, ShutdownGrace: Duration{5 * time.Second}, LogLevel: "debug",
		MaxBodyBytesInFlight: 16 << 20, MaxConns: 100, MaxConnsPerAddress: 10,
		HandshakeTimeout: Duration{2 * time.Second}, FirstRequestTimeout: Duration{20 * time.Second},
		MetricsOnWebhookPort: true,
	}
	if s != want {
		t.Errorf("settings\n got %+v\nwant %+v", s, want)
	}
}

// TestParseEmpty: a file holding no configuration is refused, never taken
// for the built-in defaults: it is what a file rewritten in place holds
// for a moment.
func TestParseEmpty(t *testing.T) {
	for _, data := range []string{"", "\n\n", "# soon\n", "---\n", "--- # x\n", "null\n", "~\n", "  \n \n"} {
		_, err := Parse("graft.yaml", []byte(data))
		if !errors.Is(err, ErrEmpty) || !IsError(err) {
			t.Errorf("%q: error %v, want a config *Error for ErrEmpty", data, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "graft.yaml: no configuration") {
			t.Errorf("%q: message %q", data, err)
		}
	}
}

// TestParseWithoutProfiles: a file naming no profiles gets the built-in
// ones, and a file without apiVersion and kind is read as this version.
func TestParseWithoutProfiles(t *testing.T) {
	for _, data := range []string{"{}", "server: {addr: ':1'}\n", "defaultProfile: otel-agent\n"} {
		f, err := Parse("graft.yaml", []byte(data))
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		def := inject.DefaultConfig()
		if len(f.Profiles) != len(def.Profiles) || f.APIVersion != APIVersion || f.Kind != Kind {
			t.Errorf("%q: got %+v", data, f)
		}
		wantDefault := def.DefaultProfile
		if strings.HasPrefix(data, "defaultProfile") {
			wantDefault = "otel-agent"
		}
		if f.DefaultProfile != wantDefault {
			t.Errorf("%q: default profile %q, want %q", data, f.DefaultProfile, wantDefault)
		}
	}
}

// TestParseReadsValuesAsKubernetesTools: values mean what they mean in a
// manifest (YAML 1.1), anchors and merge keys work.
func TestParseReadsValuesAsKubernetesTools(t *testing.T) {
	f, err := Parse("graft.yaml", []byte(`
profiles:
  base: &base {templates: [otel-agent], injectHostNetwork: yes}
  copy:
    <<: *base
    failureMode: deny
`))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Profiles["base"].InjectHostNetwork || !f.Profiles["copy"].InjectHostNetwork ||
		f.Profiles["copy"].FailureMode != inject.FailDeny || len(f.Profiles["copy"].Templates) != 1 {
		t.Errorf("profiles: %+v", f.Profiles)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown top-level field", "profile: {}\n",
			`graft.yaml:1: unknown field "profile" (did you mean "profiles"?)`},
		{"unknown server field", "server:\n  port: 8443\n",
			`graft.yaml:2: server: unknown field "port"; valid fields: addr, adminAddr, apiServerToken, budget, clientCA, drainDelay, firstRequestTimeout, handshakeTimeout, idleTimeout, logLevel, maxBodyBytes, maxBodyBytesInFlight, maxConnAge, maxConnRequests, maxConns, maxConnsPerAddress, maxInFlight, metricsOnWebhookPort, readTimeout, shutdownGrace, templatesDir, timeoutMargin, tlsCert, tlsKey, tlsMinVersion, writeTimeout`},
		{"misspelt profile field", "profiles:\n  enabled:\n    templates: [otel-agent]\n    onInvalidParam: deny\n",
			`graft.yaml:4: profiles.enabled: unknown field "onInvalidParam" (did you mean "onInvalidParams"?)`},
		{"case slip", "defaultprofile: x\n",
			`graft.yaml:1: unknown field "defaultprofile" (did you mean "defaultProfile"?)`},
		{"duplicate key", "server:\n  addr: ':1'\n  addr: ':2'\n",
			`graft.yaml:3: server.addr: given twice (first on line 2)`},
		{"duration as number", "server: {budget: 200}\n",
			`graft.yaml:1: server.budget: "200": want a duration such as "200ms" or "1m"`},
		{"bad duration", "server:\n  budget: soon\n",
			`graft.yaml:2: server.budget: "soon": want a duration such as "200ms" or "1m"`},
		{"number for a string", "server: {tlsMinVersion: 1.3}\n",
			`graft.yaml:1: server.tlsMinVersion: "1.3": want a string (YAML reads 1.3 unquoted as another type: write "1.3")`},
		{"YAML 1.1 boolean for a string", "server: {logLevel: off}\n",
			`graft.yaml:1: server.logLevel: "off": want a string (YAML reads off unquoted as another type: write "off")`},
		{"string for a number", "server: {maxInFlight: many}\n",
			`graft.yaml:1: server.maxInFlight: "many": want a whole number`},
		{"string for a boolean", "profiles: {a: {templates: [otel-agent], injectHostNetwork: sometimes}}\n",
			`graft.yaml:1: profiles.a.injectHostNetwork: "sometimes": want true or false`},
		{"scalar for a list", "profiles:\n  a:\n    templates: otel-agent\n",
			`graft.yaml:3: profiles.a.templates: "otel-agent": want a list`},
		{"list for a mapping", "server: [a]\n", `graft.yaml:1: server: a list: want a mapping`},
		{"bad enum", "profiles:\n  a: {templates: [otel-agent], failureMode: sometimes}\n",
			`graft.yaml:2: profiles.a.failureMode: "sometimes": want allow or deny`},
		{"bad onConflict", "profiles:\n  a:\n    templates: [otel-agent]\n    onConflict: replace\n",
			`graft.yaml:4: profiles.a.onConflict: "replace": want deny or keep`},
		{"bad list element", "excludedNamespaces: [a, [b]]\n",
			`graft.yaml:1: excludedNamespaces[1]: a list: want a string`},
		{"not yaml", "server: [\n", `graft.yaml:1: invalid YAML: did not find expected node content`},
		// The line of the key that breaks the mapping, not the line before
		// the mapping began (the YAML library's figure, 1 here).
		{"a key out of line", "profiles:\n  a:\n    templates: [agent]\n   onConflict: keep\n",
			`graft.yaml:4: invalid YAML: did not find expected key`},
		{"two documents", "server: {}\n---\nprofiles: {}\n", `graft.yaml:2: a second YAML document; the configuration is one document`},
		{"top level not a mapping", "- a\n", `graft.yaml:1: a list: want a mapping`},
		{"wrong version", "apiVersion: config.graft.dev/v2\n",
			`graft.yaml:1: apiVersion: "config.graft.dev/v2" is not a version this graft reads (want config.graft.dev/v1alpha1)`},
		{"wrong kind", "defaultProfile: a\nkind: Pod\n", `graft.yaml:2: kind: "Pod": want GraftConfiguration`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("graft.yaml", []byte(tc.yaml))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n got %v\nwant %s", err, tc.want)
			}
			if !IsError(err) {
				t.Errorf("%T is not a config *Error", err)
			}
		})
	}
}

func TestServerValidation(t *testing.T) {
	cases := []struct {
		name string
		s    Server
		want string
	}{
		{"tls 1.1", Server{TLSMinVersion: "1.1"}, "tlsMinVersion"},
		{"negative budget", Server{Budget: Duration{-time.Second}}, "budget"},
		{"negative body", Server{MaxBodyBytes: -1}, "maxBodyBytes"},
		{"negative in-flight", Server{MaxInFlight: -1}, "maxInFlight"},
		{"negative connection age", Server{MaxConnAge: Duration{-time.Second}}, "maxConnAge"},
		{"negative connection requests", Server{MaxConnRequests: -1}, "maxConnRequests"},
		{"negative drain delay", Server{DrainDelay: Duration{-time.Second}}, "drainDelay"},
		{"negative handshake timeout", Server{HandshakeTimeout: Duration{-time.Second}}, "handshakeTimeout"},
		{"negative first request timeout", Server{FirstRequestTimeout: Duration{-time.Second}}, "firstRequestTimeout"},
		{"negative connections", Server{MaxConns: -1}, "maxConns"},
		{"negative connections per address", Server{MaxConnsPerAddress: -1}, "maxConnsPerAddress"},
		{"negative body bytes in flight", Server{MaxBodyBytesInFlight: -1}, "maxBodyBytesInFlight"},
		{"body budget under the largest body", Server{MaxBodyBytes: 8 << 20, MaxBodyBytesInFlight: 4 << 20}, "the largest body could never be read"},
		{"more per address than in all", Server{MaxConns: 10, MaxConnsPerAddress: 20}, "maxConnsPerAddress 20 is more than maxConns 10"},
		{"token audience with a path", Server{APIServerToken: &APIServerToken{Audience: "https://graft.graft-system.svc:443/inject", WebhookConfiguration: "graft"}}, "without a path"},
		{"token audience over http", Server{APIServerToken: &APIServerToken{Audience: "http://graft.graft-system.svc:443", WebhookConfiguration: "graft"}}, "apiServerToken.audience"},
		{"token audience missing", Server{APIServerToken: &APIServerToken{WebhookConfiguration: "graft"}}, "apiServerToken.audience"},
		{"token without its webhook configuration", Server{APIServerToken: &APIServerToken{Audience: "https://graft.graft-system.svc:443"}}, "apiServerToken.webhookConfiguration"},
		{"token with a webhook configuration no object can be named", Server{APIServerToken: &APIServerToken{Audience: "https://graft.graft-system.svc:443", WebhookConfiguration: "Graft_1"}}, "apiServerToken.webhookConfiguration"},
		{"bad log level", Server{LogLevel: "loud"}, "logLevel"},
		{"cert without key", Server{TLSCert: "c.pem"}, "tlsKey"},
		{"key without cert", Server{TLSKey: "k.pem"}, "tlsCert"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Default()
			if !errors.Is(err, ErrServer) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrServer mentioning %q", err, tc.want)
			}
		})
	}
}

// TestHot: a reload takes the hot settings from the new file and keeps
// the rest from the running ones.
func TestHot(t *testing.T) {
	running := Server{Addr: ":1", Budget: Duration{time.Second}, LogLevel: "info", TLSCert: "a"}
	next := Server{Addr: ":2", Budget: Duration{time.Millisecond}, LogLevel: "debug", MaxInFlight: 7, TLSCert: "b"}
	got := next.Hot(running)
	want := Server{Addr: ":1", Budget: Duration{time.Millisecond}, LogLevel: "debug", MaxInFlight: 7, TLSCert: "a"}
	if got != want {
		t.Errorf("Hot\n got %+v\nwant %+v", got, want)
	}
}

func TestLoad(t *testing.T) {
	if f, err := Load(""); err != nil || len(f.Profiles) != len(inject.DefaultConfig().Profiles) {
		t.Errorf("no file: %+v, %v", f, err)
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	if _, err := Load(missing); err == nil || err.Error() != "config: "+missing+": no such file or directory" {
		t.Errorf("missing file: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxFileBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); !errors.Is(err, bounded.ErrTooLarge) {
		t.Errorf("oversized file: %v", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("server:\n  adr: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+`:2: server: unknown field "adr"`) {
		t.Errorf("bad file: %v", err)
	}
}

func TestTemplates(t *testing.T) {
	builtin, err := Templates("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	own := "name: log-shipper\ndescription: replaced\nfragment: |\n  containers:\n    - {name: mine, image: x, securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}}\n"
	if err := os.WriteFile(filepath.Join(dir, "log-shipper.yaml"), []byte(own), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := Templates(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := set.Names(), builtin.Names(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("overlay names %v, want %v", got, want)
	}
	if tpl, _ := set.Get("log-shipper"); tpl.Description != "replaced" {
		t.Errorf("log-shipper.yaml did not replace the built-in log-shipper: %q", tpl.Description)
	}
	if _, err := Templates(t.TempDir()); err == nil {
		t.Error("an empty templates directory was accepted")
	}
}

// TestTemplatesRefusesWhatLintRefuses: every template set of lint's table,
// as a templates directory, is refused exactly when lint refuses it, and
// the error lists lint's lines.
func TestTemplatesRefusesWhatLintRefuses(t *testing.T) {
	cases, err := linttest.Cases()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		for _, set := range tc.Sets() {
			t.Run(set.Name, func(t *testing.T) {
				dir := t.TempDir()
				if err := set.Write(dir); err != nil {
					t.Fatal(err)
				}
				_, err := Templates(dir)
				if bad := set.CheckLoad(dir, err); bad != nil {
					t.Fatal(bad)
				}
			})
		}
	}
}
