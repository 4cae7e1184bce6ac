package refdocs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const repoRoot = "../.."

// TestGeneratedFilesAreCurrent: the references in the repository are what
// the code generates now; a changed type, doc comment, default or template
// function makes this fail until they are regenerated.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := Generate(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := Stale(repoRoot, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range stale {
		t.Errorf("%s is stale: run `go generate ./internal/refdocs` (or `make docs`)", path)
	}
}

// TestConfigReferenceNamesEveryKey: every key of the defaults golden (what
// graft runs with) is documented in the configuration reference.
func TestConfigReferenceNamesEveryKey(t *testing.T) {
	doc, err := configReference(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join(repoRoot, "config", "testdata", "defaults.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(golden), "\n") {
		k, _, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || strings.HasPrefix(k, "#") || strings.HasPrefix(k, "-") || strings.Contains(k, " ") {
			continue
		}
		// Profile names are data, not keys.
		if _, isProfile := map[string]bool{"agent": true, "enabled": true, "log-shipper": true, "mesh-proxy": true,
			"mesh-proxy-secrets-agent": true, "otel-agent": true, "otel-agent-log-shipper": true, "secrets-agent": true}[k]; isProfile {
			continue
		}
		n++
		if !bytes.Contains(doc, []byte("| `"+k+"` |")) {
			t.Errorf("key %s of the defaults golden has no row in the reference", k)
		}
	}
	if n < 10 {
		t.Fatalf("read only %d keys from the golden", n)
	}
}

// TestUndocumentedKeyFails: a key without a doc comment stops generation,
// naming it.
func TestUndocumentedKeyFails(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "demo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := "package demo\n\n// Settings are settings.\ntype Settings struct {\n" +
		"\t// Documented is fine.\n\tDocumented string `json:\"documented\"`\n" +
		"\tBare int `json:\"bare\"`\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "demo.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := readSource(root, "demo")
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&builder{src: s}).build("demo.Settings", "settings", "")
	if err == nil || !strings.Contains(err.Error(), "demo.Settings.Bare has no doc comment") {
		t.Fatalf("err = %v, want one naming demo.Settings.Bare", err)
	}
}

// TestFunctionWithoutExampleFails: a template function must show an example.
func TestFunctionWithoutExampleFails(t *testing.T) {
	var b bytes.Buffer
	err := writeFunctions(&b, &source{funcs: []constant{{Name: "shout", Value: "shout", Doc: "shout writes its argument loudly."}}})
	if err == nil || !strings.Contains(err.Error(), "shout") {
		t.Fatalf("err = %v, want one naming shout", err)
	}
}

func TestRenderExample(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{{ len .hosts }}`, "2"},
		{`port: {{ .port }}`, "port: 9901"},
		{`{{ .image | quote }}`, `"ghcr.io/graftdev/agent:1.0.0"`},
		{`{{ if .debug }}on{{ else }}off{{ end }}`, "off"},
	} {
		got, err := renderExample(c.line)
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		if got != c.want {
			t.Errorf("%s rendered %q, want %q", c.line, got, c.want)
		}
	}
	if _, err := renderExample(`{{ .nope }}`); err == nil {
		t.Error("an example naming an undeclared parameter rendered")
	}
}

func TestRewriteDoc(t *testing.T) {
	names := map[string]string{"DefaultProfile": "defaultProfile", "TLSCert": "tlsCert", "TLSKey": "tlsKey"}
	for in, want := range map[string]string{
		"DefaultProfile is served on /inject.":       "`defaultProfile` is served on /inject.",
		"TLSCert and TLSKey are PEM\nfiles.":         "`tlsCert` and `tlsKey` are PEM files.",
		"Both empty (TLSCert, TLSKey): self-signed.": "Both empty (`tlsCert`, `tlsKey`): self-signed.",
		"A DefaultProfileName stays.":                "A DefaultProfileName stays.",
	} {
		if got := rewriteDoc(in, names); got != want {
			t.Errorf("rewriteDoc(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSharedFieldDoc(t *testing.T) {
	s, err := readSource(repoRoot, "config")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range s.fields["config.Server"] {
		if f.goName == "TLSKey" && !strings.HasPrefix(f.doc, "TLSCert and TLSKey") {
			t.Errorf("TLSKey's doc = %q, want TLSCert's, which names it", f.doc)
		}
	}
}

func TestAnchor(t *testing.T) {
	for in, want := range map[string]string{
		"`profiles.<name>`":        "profilesname",
		"Top level":                "top-level",
		"`fragment.appContainers`": "fragmentappcontainers",
		"GraftDown":                "graftdown",
	} {
		if got := Anchor(in); got != want {
			t.Errorf("Anchor(%q) = %q, want %q", in, got, want)
		}
	}
}
