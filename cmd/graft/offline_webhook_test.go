package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/inject"
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

// For every Pod of the engine's corpora, `graft inject` prints what the
// webhook's patch makes of it, from YAML and from JSON input alike.
func TestInjectEqualsWebhookPatch(t *testing.T) {
	cfg, set, err := loadEngineConfig("", "")
	if err != nil {
		t.Fatal(err)
	}
	e, err := inject.New(cfg, set)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range corpus.Names() {
		t.Run(name, func(t *testing.T) {
			ns, pod, want := webhookResult(t, e, corpus.Review(name))
			if injected := !jsonpatch.Equal(pod, want); injected != (name != corpus.Skip) {
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
			if name == corpus.Huge {
				// 5,000 env vars: the JSON path alone; the engine's first
				// patch for a new shape dominates and is the same for both.
				inputs = inputs[:1]
			}
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
