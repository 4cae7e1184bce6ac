package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/offline"
)

// webhookResult is what the webhook makes of review: the request's Pod
// with the response's patch applied, as the API server would store it.
func webhookResult(t *testing.T, e *inject.Engine, review []byte) (namespace string, pod, want []byte) {
	t.Helper()
	var req struct {
		Request struct {
			Namespace string          `json:"namespace"`
			Object    json.RawMessage `json:"object"`
		} `json:"request"`
	}
	if err := json.Unmarshal(review, &req); err != nil {
		t.Fatal(err)
	}
	out, _, err := e.Admit(nil, review, inject.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Response struct {
			Allowed bool   `json:"allowed"`
			Patch   []byte `json:"patch"` // base64 in JSON
		} `json:"response"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	want = req.Request.Object
	if len(resp.Response.Patch) > 0 {
		p, err := jsonpatch.DecodePatch(resp.Response.Patch)
		if err != nil {
			t.Fatal(err)
		}
		if want, err = p.Apply(want); err != nil {
			t.Fatal(err)
		}
	}
	return req.Request.Namespace, req.Request.Object, want
}

// newTestEngine is the engine graft runs with by default.
func newTestEngine(tb testing.TB) *inject.Engine {
	tb.Helper()
	cfg, set, err := offline.LoadConfig("", "")
	if err != nil {
		tb.Fatal(err)
	}
	e, err := inject.New(cfg, set)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// For every Pod of the engine's corpora, `graft inject` prints what the
// webhook's patch makes of it, from YAML and from JSON input alike.
func TestInjectEqualsWebhookPatch(t *testing.T) {
	e := newTestEngine(t)
	dir := t.TempDir()
	for _, name := range corpus.Names() {
		t.Run(name, func(t *testing.T) {
			ns, pod, want := webhookResult(t, e, corpus.Review(name))
			// skip is opted out and injected already carries everything.
			wantInjected := name != corpus.Skip && name != corpus.Injected
			if injected := !jsonpatch.Equal(pod, want); injected != wantInjected {
				t.Fatalf("webhook injected=%v into corpus %s", injected, name)
			}
			podYAML, err := yaml.JSONToYAML(pod)
			if err != nil {
				t.Fatal(err)
			}
			inputs := []struct {
				file string
				data []byte
			}{{name + ".json", pod}, {name + ".yaml", podYAML}}
			for _, in := range inputs {
				path := filepath.Join(dir, in.file)
				if err := os.WriteFile(path, in.data, 0o644); err != nil {
					t.Fatal(err)
				}
				got := runGraft(t, "inject", "-f", path, "-n", ns, "-o", "json")
				if !jsonpatch.Equal(got, want) {
					t.Errorf("%s: graft inject differs from the webhook's patch applied:\ngot  %.600s\nwant %.600s", in.file, got, want)
				}
			}
		})
	}
}

// goldenConfigFile writes the configuration the engine's golden corpus is
// written against (goldenConfig in inject/golden_test.go) as a config file,
// with a server section, as graft serve takes it.
func goldenConfigFile(t *testing.T, dir string) string {
	t.Helper()
	cfg := inject.DefaultConfig()
	// As inject's goldenConfig: the corpus sets parameters the shipped
	// profiles lock beyond images, so here they lock images only.
	for name, p := range cfg.Profiles {
		p.LockedParams = []string{"*.image"}
		cfg.Profiles[name] = p
	}
	cfg.DefaultProfile = "agent"
	cfg.Profiles["agent"] = inject.Profile{Templates: []string{"agent"}}
	cfg.Profiles["lenient"] = inject.Profile{Templates: []string{"agent"}, OnInvalidParams: inject.InvalidUseDefault}
	cfg.Profiles["hostnet"] = inject.Profile{Templates: []string{"agent"}, InjectHostNetwork: true}
	cfg.Profiles["classic"] = inject.Profile{Templates: []string{"classic-sidecar"}}
	cfg.Profiles["token-aware"] = inject.Profile{Templates: []string{"token-aware", "agent"}}
	cfg.Profiles["keep"] = inject.Profile{Templates: []string{"agent"}, OnConflict: inject.ConflictKeep}
	cfg.Profiles["keep-otel-agent-log-shipper"] = inject.Profile{Templates: []string{"otel-agent", "log-shipper"}, OnConflict: inject.ConflictKeep}
	fixtures, err := filepath.Abs("../../inject/testdata/templates")
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	server := fmt.Sprintf("server: {logLevel: debug, templatesDir: %q}\n", fixtures)
	if err := os.WriteFile(path, append([]byte(server), y...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// For every Pod CREATE in the engine's golden corpus, `graft inject` prints
// the golden's patched Pod (the webhook's patch applied), leaves skipped
// Pods as they are and fails on denied ones; and injecting the output again
// changes nothing.
func TestInjectMatchesGoldenCorpus(t *testing.T) {
	inputs, err := filepath.Glob("../../inject/testdata/golden/*.in.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden corpus: %v", err)
	}
	dir := t.TempDir()
	config := goldenConfigFile(t, dir)
	checked := 0
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		var c struct {
			Profile string `json:"profile"`
			// Prepare: the case's object is the review's, injected with
			// Prepare.Profile, then Prepare.Patch applied.
			Prepare *struct {
				Profile string          `json:"profile"`
				Patch   json.RawMessage `json:"patch"`
			} `json:"prepare"`
			Review struct {
				Request struct {
					Namespace   string                `json:"namespace"`
					Operation   string                `json:"operation"`
					SubResource string                `json:"subResource"`
					Kind        struct{ Kind string } `json:"kind"`
					Object      json.RawMessage       `json:"object"`
				} `json:"request"`
			} `json:"review"`
		}
		var g struct {
			Decision string          `json:"decision"`
			Reason   string          `json:"reason"`
			Patched  json.RawMessage `json:"patched"`
		}
		readJSON(t, in, &c)
		readJSON(t, strings.TrimSuffix(in, ".in.json")+".golden.json", &g)
		req := c.Review.Request
		if req.Operation != "CREATE" || req.Kind.Kind != "Pod" || req.SubResource != "" {
			continue // not a Pod as a manifest holds one
		}
		checked++
		t.Run(name, func(t *testing.T) {
			var meta struct {
				Metadata struct{ Namespace string } `json:"metadata"`
			}
			_ = json.Unmarshal(req.Object, &meta) // a Pod: checked by the corpus
			if ns := meta.Metadata.Namespace; ns != "" && ns != req.Namespace {
				// The API server refuses such a request before admission;
				// graft inject refuses such a manifest (see inject_errors).
				t.Skipf("object namespace %q differs from the request's %q", meta.Metadata.Namespace, req.Namespace)
			}
			if c.Prepare != nil {
				first := filepath.Join(dir, "prepare-"+name+".json")
				if err := os.WriteFile(first, req.Object, 0o644); err != nil {
					t.Fatal(err)
				}
				prepArgs := []string{"inject", "-f", first, "--config", config, "-n", req.Namespace, "-o", "json"}
				if c.Prepare.Profile != "" {
					prepArgs = append(prepArgs, "--profile", c.Prepare.Profile)
				}
				req.Object = runGraft(t, prepArgs...)
				if len(c.Prepare.Patch) > 0 {
					p, err := jsonpatch.DecodePatch(c.Prepare.Patch)
					if err != nil {
						t.Fatal(err)
					}
					if req.Object, err = p.Apply(req.Object); err != nil {
						t.Fatal(err)
					}
				}
			}
			podYAML, err := yaml.JSONToYAML(req.Object)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"--config", config, "-n", req.Namespace, "-o", "json"}
			if c.Profile != "" {
				args = append(args, "--profile", c.Profile)
			}
			for _, f := range []struct {
				file string
				data []byte
			}{{name + ".json", req.Object}, {name + ".yaml", podYAML}} {
				path := filepath.Join(dir, f.file)
				if err := os.WriteFile(path, f.data, 0o644); err != nil {
					t.Fatal(err)
				}
				if g.Decision == "deny" {
					var stdout, stderr bytes.Buffer
					code := run(append([]string{"inject", "-f", path}, args...), strings.NewReader(""), &stdout, &stderr)
					if code == 0 || stdout.Len() > 0 || !strings.Contains(stderr.String(), "denied ("+g.Reason+")") {
						t.Errorf("%s: exit %d, stdout %q, stderr %q; want a denial (%s) and no output", f.file, code, stdout.String(), stderr.String(), g.Reason)
					}
					continue
				}
				want := req.Object
				if g.Decision == "inject" {
					want = g.Patched
				}
				got := runGraft(t, append([]string{"inject", "-f", path}, args...)...)
				if !jsonpatch.Equal(got, want) {
					t.Errorf("%s (%s/%s): graft inject differs from the golden:\ngot  %.800s\nwant %.800s", f.file, g.Decision, g.Reason, got, want)
				}
				again := filepath.Join(dir, "again-"+f.file)
				if err := os.WriteFile(again, got, 0o644); err != nil {
					t.Fatal(err)
				}
				if twice := runGraft(t, append([]string{"inject", "-f", again}, args...)...); !bytes.Equal(twice, got) {
					t.Errorf("%s: inject twice differs from once:\n%s\n%s", f.file, got, twice)
				}
			}
		})
	}
	if checked < 30 {
		t.Errorf("checked %d Pod cases of the golden corpus, want at least 30", checked)
	}
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}
