package deploy

import (
	"bytes"
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// TestChartRendersWhatKustomizeBuilds: for equivalent values the chart
// renders the objects the kustomize base and overlays build, object by
// object. Only what cannot be the same is normalised (see normalise).
func TestChartRendersWhatKustomizeBuilds(t *testing.T) {
	h := newHelm(t)
	// A copy of deploy/ whose self-signed overlay has certificates.
	root, _ := selfSignedTree(t)
	// Overlays the tree lacks: a component added to a base or overlay.
	for dir, body := range map[string]string{
		"cert-manager-monitoring": "resources: [../cert-manager]\ncomponents: [../../components/monitoring]\n",
		"base-audit":              "resources: [../../base]\ncomponents: [../../components/audit]\n",
		"base-network-policy":     "resources: [../../base]\ncomponents: [../../components/network-policy]\n",
		"base-watchdog":           "resources: [../../base]\ncomponents: [../../components/watchdog]\n",
	} {
		dir = filepath.Join(root, "overlays", dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + body
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	certs := filepath.Join(root, "overlays", "self-signed", "certs")
	variants := map[string]chartVariant{}
	for _, v := range chartVariants(t, certs) {
		variants[v.name] = v
	}

	for _, c := range []struct{ kustomize, chart string }{
		{"base", "existing-secret"},
		{"overlays/cert-manager", "cert-manager"},
		{"overlays/ha", "ha"},
		{"overlays/self-signed", "graft-certs"},
		{"overlays/cert-manager-monitoring", "monitoring"},
		{"overlays/base-audit", "audit"},
		{"overlays/base-network-policy", "network-policy"},
		{"overlays/base-watchdog", "watchdog"},
	} {
		t.Run(c.kustomize, func(t *testing.T) {
			v, ok := variants[c.chart]
			if !ok {
				t.Fatalf("no %s/ci/%s-values.yaml", chartDir, c.chart)
			}
			want := normaliseAll(t, kustomize(t, filepath.Join(root, c.kustomize)))
			got := normaliseAll(t, withoutHooks(h.render(t, v.args...)))
			for _, key := range sortedKeys(want) {
				g, ok := got[key]
				if !ok {
					t.Errorf("%s: built by kustomize, not rendered by the chart", key)
					continue
				}
				if d := gocmp.Diff(want[key], g); d != "" {
					t.Errorf("%s differs (-kustomize +chart):\n%s", key, d)
				}
			}
			for _, key := range sortedKeys(got) {
				if _, ok := want[key]; !ok {
					t.Errorf("%s: rendered by the chart, not built by kustomize", key)
				}
			}
		})
	}
}

// withoutHooks leaves out the objects Helm creates only for a hook: the
// `helm test` Pod and its CA, which kustomize has no counterpart for.
func withoutHooks(out output) output {
	var kept output
	for _, o := range out {
		if !bytes.Contains(o.yaml, []byte("helm.sh/hook:")) {
			kept = append(kept, o)
		}
	}
	return kept
}

// helmLabels are the labels Helm's conventions put on every object: the
// chart and its version, the release and the tool. kustomize has no
// release to name, so they are the one thing the chart adds.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

// normaliseAll decodes and normalises every object, keyed by kind,
// namespace and name.
func normaliseAll(t *testing.T, out output) map[string]any {
	t.Helper()
	objs := map[string]any{}
	for _, o := range out {
		key := o.kind + " " + o.namespace + "/" + o.name
		if _, dup := objs[key]; dup {
			t.Fatalf("%s twice", key)
		}
		var m map[string]any
		if err := yaml.Unmarshal(o.yaml, &m); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		objs[key] = normalise(t, o.kind, m)
	}
	return objs
}

// normalise removes the differences that say nothing about the cluster:
//   - Helm's own labels (helmLabels);
//   - the configuration file, compared as the YAML it holds: base's
//     config.yaml keeps its comments, which a value rendered by the chart
//     cannot;
//   - the order of sets: the values of a label selector's In and NotIn,
//     and the webhooks of a MutatingWebhookConfiguration, whose
//     namespaceSelectors never overlap (one profile's label value each), so
//     their order does not decide which is called.
func normalise(t *testing.T, kind string, m map[string]any) map[string]any {
	t.Helper()
	if meta, ok := m["metadata"].(map[string]any); ok {
		if labels, ok := meta["labels"].(map[string]any); ok {
			for _, l := range helmLabels {
				delete(labels, l)
			}
			if len(labels) == 0 {
				delete(meta, "labels")
			}
		}
	}
	if data, ok := m["data"].(map[string]any); ok && kind == "ConfigMap" {
		if s, ok := data["config.yaml"].(string); ok {
			var v any
			if err := yaml.Unmarshal([]byte(s), &v); err != nil {
				t.Fatalf("config.yaml: %v", err)
			}
			data["config.yaml"] = v
		}
	}
	if hooks, ok := m["webhooks"].([]any); ok {
		slices.SortFunc(hooks, func(a, b any) int {
			return cmp.Compare(a.(map[string]any)["name"].(string), b.(map[string]any)["name"].(string))
		})
	}
	sortSelectorValues(m)
	return m
}

// sortSelectorValues sorts the values of every In or NotIn requirement.
func sortSelectorValues(v any) {
	switch v := v.(type) {
	case map[string]any:
		if op := v["operator"]; op == "In" || op == "NotIn" {
			if vals, ok := v["values"].([]any); ok {
				slices.SortFunc(vals, func(a, b any) int { return cmp.Compare(a.(string), b.(string)) })
			}
		}
		for _, e := range v {
			sortSelectorValues(e)
		}
	case []any:
		for _, e := range v {
			sortSelectorValues(e)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
