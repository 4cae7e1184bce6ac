package offline

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
)

// keepConfig: profiles that keep a Pod's own object of graft's name
// rather than deny the Pod.
const keepConfig = `defaultProfile: enabled
profiles:
  enabled:
    templates: [mesh-proxy]
    onConflict: keep
  two:
    templates: [mesh-proxy, secrets-agent]
    onConflict: keep
`

// What happened to each template of a Pod, as the webhook's response
// (its Result and warnings), graft inject's line about the object and
// graft explain say it: the three agree, for a template injected, kept
// out under onConflict: keep, and a Pod skipped with a reason.
func TestTemplateOutcomesAgree(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(keepConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	engine, err := NewEngine(cfg, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	ownProxy := []any{map[string]any{"name": "app", "image": "registry.invalid/app:1"},
		map[string]any{"name": "graft-proxy", "image": "registry.invalid/my-proxy:1"}}
	plain := []any{map[string]any{"name": "app", "image": "registry.invalid/app:1"}}
	tests := []struct {
		name       string
		profile    string
		labels     map[string]string
		containers []any
		decision   string
		reason     string
		injected   []string
		kept       []string
		summary    string
	}{
		{name: "injected", profile: "enabled", containers: plain, decision: "inject", reason: "none",
			injected: []string{"mesh-proxy"}, summary: "injected mesh-proxy"},
		{name: "kept on conflict", profile: "enabled", containers: ownProxy, decision: "inject", reason: "none",
			kept: []string{"mesh-proxy"}, summary: "injected nothing; kept out mesh-proxy (onConflict: keep)"},
		{name: "one kept, one injected", profile: "two", containers: ownProxy, decision: "inject", reason: "none",
			injected: []string{"secrets-agent"}, kept: []string{"mesh-proxy"}, summary: "injected secrets-agent; kept out mesh-proxy (onConflict: keep)"},
		{name: "skipped with a reason", profile: "enabled", labels: map[string]string{names.Inject: names.OptOutValue}, containers: ownProxy,
			decision: "skip", reason: "opted-out", summary: "skipped opted-out"},
	}
	keptWarning := regexp.MustCompile(`^graft: template (\S+) not injected: (.*)$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": tt.labels},
				"spec":     map[string]any{"containers": tt.containers}}
			raw, err := json.Marshal(pod)
			if err != nil {
				t.Fatal(err)
			}

			// The webhook: the engine's Result and the response's warnings.
			out, res, err := engine.Admit(nil, audit.Review(audit.Pod{Namespace: "shop", Name: "web", JSON: raw}), inject.Options{Profile: tt.profile})
			if err != nil {
				t.Fatal(err)
			}
			var resp struct {
				Response struct{ Warnings []string } `json:"response"`
			}
			if err := json.Unmarshal(out, &resp); err != nil {
				t.Fatal(err)
			}
			var warned, whys []string
			for _, w := range resp.Response.Warnings {
				if m := keptWarning.FindStringSubmatch(w); m != nil {
					warned, whys = append(warned, m[1]), append(whys, m[2])
				}
			}
			var resKept, resWhy []string
			for _, k := range res.Kept {
				resKept, resWhy = append(resKept, k.Template), append(resWhy, k.Why)
			}
			if res.Decision.String() != tt.decision || res.Reason.String() != tt.reason {
				t.Errorf("webhook: %s/%s, want %s/%s", res.Decision, res.Reason, tt.decision, tt.reason)
			}
			if !slices.Equal(res.Templates, tt.injected) || !slices.Equal(resKept, tt.kept) {
				t.Errorf("webhook: Result injected %v, kept %v; want %v, %v", res.Templates, resKept, tt.injected, tt.kept)
			}
			if !slices.Equal(warned, tt.kept) || !slices.Equal(whys, resWhy) {
				t.Errorf("webhook: warnings keep out %v because %q; Result.Kept says %v because %q", warned, whys, resKept, resWhy)
			}

			// graft inject and graft explain, on the same Pod in a file.
			y, err := yaml.Marshal(pod)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "pod.yaml")
			if err := os.WriteFile(file, y, 0o600); err != nil {
				t.Fatal(err)
			}
			opts := Options{Inputs: []string{file}, Config: cfg, NamespaceLabels: map[string]string{names.Inject: tt.profile}}
			var stderr bytes.Buffer
			run, err := Open(opts, nil, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			err = run.Inject(false)
			run.Report().Flush(err)
			if err != nil {
				t.Fatal(err)
			}
			var line string
			for _, l := range strings.Split(stderr.String(), "\n") {
				if after, ok := strings.CutPrefix(l, "Pod/web: "); ok {
					line = after
				}
			}
			if line != tt.summary {
				t.Errorf("graft inject says %q, want %q:\n%s", line, tt.summary, stderr.String())
			}
			for _, k := range tt.kept {
				if !strings.Contains(stderr.String(), "graft: template "+k+" not injected: ") {
					t.Errorf("graft inject does not pass on the warning for %s:\n%s", k, stderr.String())
				}
			}

			run, err = Open(opts, nil, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			js, err := run.Explain(true)
			if err != nil {
				t.Fatal(err)
			}
			var ex Explanation
			if err := json.Unmarshal(js, &ex); err != nil {
				t.Fatal(err)
			}
			var exKept, exWhy []string
			for _, k := range ex.Kept {
				exKept, exWhy = append(exKept, k.Template), append(exWhy, k.Why)
			}
			if ex.Decision != tt.decision || ex.Reason != tt.reason || !slices.Equal(ex.Templates, orEmpty(tt.injected)) ||
				!slices.Equal(exKept, tt.kept) || !slices.Equal(exWhy, resWhy) {
				t.Errorf("graft explain: %s/%s, templates %v, kept %v because %q; want %s/%s, %v, %v because %q",
					ex.Decision, ex.Reason, ex.Templates, exKept, exWhy, tt.decision, tt.reason, tt.injected, tt.kept, resWhy)
			}
			text, err := run.Explain(false)
			if err != nil {
				t.Fatal(err)
			}
			for i, k := range tt.kept {
				if want := "kept out:   " + k + ": " + resWhy[i] + " (onConflict: keep)"; !strings.Contains(string(text), want) {
					t.Errorf("graft explain does not say %q:\n%s", want, text)
				}
			}
		})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
