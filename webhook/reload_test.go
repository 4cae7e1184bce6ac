package webhook

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/fixture"
)

// extraTemplate is the engine's agent fixture renamed, with its image as given.
func extraTemplate(t *testing.T, image string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(fixture.Dir(), "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "name: agent\n", "name: extra\n", 1)
	s = strings.ReplaceAll(s, "graft-agent", "graft-extra")
	return strings.Replace(s, "default: ghcr.io/graftdev/agent:1.0.0", "default: "+image, 1)
}

const extraConfig = `
defaultProfile: enabled
profiles:
  enabled: {templates: [otel-agent]}
  extra: {templates: [extra]}
`

// TestTemplatesReload: a valid templates change is served without a
// restart; an invalid one is rejected, counted, and the previous set keeps
// serving.
func TestTemplatesReload(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "extra.yaml"), extraTemplate(t, "registry.local/extra:1"))
	ts := startServer(t, serverSetup{configYAML: extraConfig, override: func(s *config.Server) { s.TemplatesDir = dir }})
	review := corpus.Review(corpus.Small)

	wantImage := func(image string) {
		t.Helper()
		code, out := ts.post(t, "/inject/extra", review)
		if code != http.StatusOK {
			t.Fatalf("status %d: %.300s", code, out)
		}
		if patch := decodePatch(t, out); !strings.Contains(string(patch), image) {
			t.Fatalf("patch does not inject %s: %s", image, patch)
		}
	}
	wantImage("registry.local/extra:1")

	// An invalid template: rejected, counted, old set serves on.
	writeFile(t, filepath.Join(dir, "broken.yaml"), "name: broken\ndescription: [unclosed\n")
	if err := waitEvent(t, ts.reloads, "templates"); err == nil {
		t.Fatal("broken template accepted")
	}
	if got := metric(t, ts.reg, "graft_config_reloads_total", "result", "error"); got != 1 {
		t.Errorf("reloads{error} = %v, want 1", got)
	}
	if !strings.Contains(ts.logs.String(), "config reload rejected") {
		t.Error("rejection not logged")
	}
	wantImage("registry.local/extra:1")

	// Fixed and changed: the new template is served.
	if err := os.Remove(filepath.Join(dir, "broken.yaml")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "extra.yaml"), extraTemplate(t, "registry.local/extra:2"))
	for !servesImage(t, ts, "registry.local/extra:2") {
		if err := waitEvent(t, ts.reloads, "templates"); err != nil {
			t.Logf("intermediate reload error: %v", err)
		}
	}
	if got := metric(t, ts.reg, "graft_config_reloads_total", "result", "success"); got < 1 {
		t.Errorf("reloads{success} = %v, want >= 1", got)
	}
}

func servesImage(t *testing.T, ts *testServer, image string) bool {
	t.Helper()
	code, out := ts.post(t, "/inject/extra", corpus.Review(corpus.Small))
	return code == http.StatusOK && strings.Contains(string(decodePatch(t, out)), image)
}

// TestConfigReload: profiles change with the config file; an invalid file
// is rejected and the previous profiles serve on.
func TestConfigReload(t *testing.T) {
	ts := startServer(t, serverSetup{configYAML: "profiles:\n  enabled: {templates: [otel-agent]}\n"})
	review := corpus.Review(corpus.Small)
	path := ts.opts.ConfigPath
	if code, _ := ts.post(t, "/inject/late", review); code != http.StatusNotFound {
		t.Fatalf("profile late before it exists: %d", code)
	}

	writeFile(t, path, "profiles:\n  enabled: {templates: [otel-agent]}\n  late: {templates: [otel-agent], failureMode: deny}\nserver:\n  budget: 150ms\n")
	if err := waitEvent(t, ts.reloads, "config"); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	if code, out := ts.post(t, "/inject/late", review); code != http.StatusOK {
		t.Fatalf("profile late after reload: %d %.200s", code, out)
	}
	if got := ts.state.Load().settings.Budget.Duration.String(); got != "150ms" {
		t.Errorf("budget after reload %s, want 150ms", got)
	}

	for _, bad := range []string{
		"profiles:\n  enabled: {templates: [otel-agent], bogus: 1}\n",                // unknown field
		"profiles:\n  enabled: {templates: [nonexistent]}\n",                         // unknown template
		"defaultProfile: missing\nprofiles:\n  enabled: {templates: [otel-agent]}\n", // bad default
		"server:\n  tlsMinVersion: \"1.1\"\n",                                        // bad setting
	} {
		writeFile(t, path, bad)
		if err := waitEvent(t, ts.reloads, "config"); err == nil {
			t.Errorf("invalid config accepted:\n%s", bad)
		}
		if code, _ := ts.post(t, "/inject/late", review); code != http.StatusOK {
			t.Fatalf("previous config stopped serving after %q: %d", bad, code)
		}
	}
}

// TestConfigReloadRewrittenInPlace: a config file rewritten in place (an
// editor, a shell's >) is empty, then cut short, for a moment; each such
// state is refused, counted and logged, and the running configuration
// keeps serving until the whole file is there.
func TestConfigReloadRewrittenInPlace(t *testing.T) {
	const full = "profiles:\n  enabled: {templates: [otel-agent]}\n  late: {templates: [otel-agent], failureMode: deny}\n"
	ts := startServer(t, serverSetup{configYAML: full})
	review := corpus.Review(corpus.Small)
	path := ts.opts.ConfigPath
	serving := func(when string) {
		t.Helper()
		if code, out := ts.post(t, "/inject/late", review); code != http.StatusOK {
			t.Fatalf("%s: the running configuration stopped serving: %d %.200s", when, code, out)
		}
	}
	serving("at start")

	rewrite := func(content string) error {
		t.Helper()
		// In place: the same inode truncated and written, as > does.
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return waitEvent(t, ts.reloads, "config")
	}
	for i, partial := range []string{
		"",                             // truncated, nothing written yet
		"# graft configuration\n",      // only a comment so far
		full[:len(full)-20],            // cut inside a flow mapping
		"profiles:\n  enabled: {templ", // cut inside a key
	} {
		err := rewrite(partial)
		if err == nil {
			t.Fatalf("%q accepted", partial)
		}
		if got := metric(t, ts.reg, "graft_config_reloads_total", "result", "error"); got != float64(i+1) {
			t.Errorf("after %q: reloads{error} = %v, want %d", partial, got, i+1)
		}
		serving(fmt.Sprintf("after %q", partial))
	}
	rejected := ts.logs.lines(t, "config reload rejected; the previous configuration keeps serving")
	if len(rejected) != 4 || !strings.Contains(fmt.Sprint(rejected[0]["error"]), "no configuration: the file is empty") {
		t.Errorf("rejections logged: %v", rejected)
	}
	if err := rewrite(full); err != nil {
		t.Fatalf("the whole file refused: %v", err)
	}
	if got := metric(t, ts.reg, "graft_config_reloads_total", "result", "success"); got != 1 {
		t.Errorf("reloads{success} = %v, want 1", got)
	}
	serving("after the whole file")
}

// TestTemplatesReloadConfigMapSwap: a templates directory mounted from a
// ConfigMap changes by swapping the ..data symlink; that is seen too.
func TestTemplatesReloadConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	configMapVersion(t, dir, "..v1", extraTemplate(t, "registry.local/extra:1"))
	if err := os.Symlink(filepath.Join("..data", "extra.yaml"), filepath.Join(dir, "extra.yaml")); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, serverSetup{configYAML: extraConfig, override: func(s *config.Server) { s.TemplatesDir = dir }})
	if !servesImage(t, ts, "registry.local/extra:1") {
		t.Fatal("initial template not served")
	}
	configMapVersion(t, dir, "..v2", extraTemplate(t, "registry.local/extra:2"))
	for !servesImage(t, ts, "registry.local/extra:2") {
		if err := waitEvent(t, ts.reloads, "templates"); err != nil {
			t.Fatalf("reload after the ..data swap: %v", err)
		}
	}
}

// configMapVersion writes extra.yaml into dir/version and points ..data
// at it atomically, as the kubelet updates a mounted ConfigMap.
func configMapVersion(t *testing.T, dir, version, extra string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, version), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, version, "extra.yaml"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(version, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}
