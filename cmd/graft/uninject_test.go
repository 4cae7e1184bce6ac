package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/offline"
)

// Property: for every Pod of the engine's golden corpus that graft
// injects with the shipped configuration, graft uninject of graft
// inject's output gives back the input, as YAML and as JSON.
func TestUninjectUndoesInject(t *testing.T) {
	paths, err := filepath.Glob("../../inject/testdata/golden/*.in.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	engine, err := offline.NewEngine("", "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	tried := 0
	for _, path := range paths {
		var c struct {
			Profile string `json:"profile"`
			Prepare any    `json:"prepare"`
			Review  struct {
				Request struct {
					Kind      struct{ Kind string } `json:"kind"`
					Operation string                `json:"operation"`
					Namespace string                `json:"namespace"`
					Object    json.RawMessage       `json:"object"`
				} `json:"request"`
			} `json:"review"`
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rq := c.Review.Request
		if c.Prepare != nil || rq.Kind.Kind != "Pod" || rq.Operation != "CREATE" || len(rq.Object) == 0 ||
			bytes.Contains(rq.Object, []byte(inject.StatusAnnotation)) {
			continue
		}
		profile := c.Profile
		if profile == "" || !slices.Contains(engine.Profiles(), profile) {
			profile = engine.DefaultProfile()
		}
		name := strings.TrimSuffix(filepath.Base(path), ".in.json")
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "pod.json")
			if err := os.WriteFile(in, rq.Object, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, format := range []string{"yaml", "json"} {
				var injected, stderr bytes.Buffer
				if code := run([]string{"inject", "-q", "-o", format, "--profile", profile, "-n", cmpOr(rq.Namespace, "default"), in}, nil, &injected, &stderr); code != 0 {
					t.Skipf("graft inject refuses it: %s", stderr.String())
				}
				if !strings.Contains(injected.String(), "graft.dev/status") {
					t.Skip("graft injects nothing into it")
				}
				var out bytes.Buffer
				stderr.Reset()
				if code := run([]string{"uninject", "-q", "-o", format, "-"}, &injected, &out, &stderr); code != 0 {
					t.Fatalf("graft uninject -o %s: %s", format, stderr.String())
				}
				if !sameObject(t, rq.Object, out.Bytes()) {
					t.Errorf("-o %s: uninject(inject(pod)) differs from pod:\n%s\ninjected:\n%s", format, out.String(), injected.String())
				}
			}
			tried++
		})
	}
	if tried < 10 {
		t.Errorf("only %d golden Pods were injected and uninjected", tried)
	}
}

// sameObject compares a JSON document with a YAML or JSON one by meaning.
func sameObject(t *testing.T, want, got []byte) bool {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	gj, err := sigsyaml.YAMLToJSON(got)
	if err != nil {
		t.Fatalf("output: %v", err)
	}
	if err := json.Unmarshal(gj, &g); err != nil {
		t.Fatal(err)
	}
	canonicalPodResources(w)
	canonicalPodResources(g)
	return reflect.DeepEqual(pruneEmpty(w), pruneEmpty(g))
}

// canonicalPodResources writes the Pod's pod-level quantities
// canonically: graft uninject takes back what graft added to them, and
// writes the result in one spelling ("0.2" comes back as "200m").
func canonicalPodResources(pod any) {
	spec, _ := pod.(map[string]any)["spec"].(map[string]any)
	res, _ := spec["resources"].(map[string]any)
	for _, side := range []string{"requests", "limits"} {
		m, _ := res[side].(map[string]any)
		for k, v := range m {
			if s, ok := v.(string); ok {
				if q, err := resource.ParseQuantity(s); err == nil {
					m[k] = strconv.FormatInt(q.MilliValue(), 10) // one spelling per value: 1e3, 1k and 1000 alike
				}
			}
		}
	}
}

// pruneEmpty drops null, empty-list and empty-map values: graft.dev/status
// cannot record that a Pod had "annotations: {}" or "volumes: null"
// before graft added to them, so uninject leaves such keys out, and the
// API server treats all three spellings alike.
func pruneEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			e = pruneEmpty(e)
			switch ee := e.(type) {
			case nil:
				delete(x, k)
				continue
			case map[string]any:
				if len(ee) == 0 {
					delete(x, k)
					continue
				}
			case []any:
				if len(ee) == 0 {
					delete(x, k)
					continue
				}
			}
			x[k] = e
		}
	case []any:
		for i, e := range x {
			x[i] = pruneEmpty(e)
		}
	}
	return v
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
