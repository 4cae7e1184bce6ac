package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"
)

// podTemplate is the Pod every workload kind below carries, indented to
// sit under a "template:" key at the given depth.
const podTemplateYAML = `metadata:
  labels: {app: web}
  annotations: {note: "keep me"}
spec:
  containers:
    - name: app
      image: example.test/app:1
      resources: {requests: {cpu: "0.25", memory: 64Mi}}
      futureField: {kept: true}
`

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pad + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// workloads are one object of every kind graft injects into, and where
// their Pod template sits (nil: the object is the Pod).
var workloads = []struct {
	kind string
	yaml string
	path []string
}{
	{"Pod", "apiVersion: v1\nkind: Pod\n" + strings.Replace(podTemplateYAML, "metadata:\n", "metadata:\n  name: web\n", 1), nil},
	{"Deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n" + indent(podTemplateYAML, 4), []string{"spec", "template"}},
	{"StatefulSet", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web}\nspec:\n  serviceName: web\n  selector: {matchLabels: {app: web}}\n  template:\n" + indent(podTemplateYAML, 4), []string{"spec", "template"}},
	{"DaemonSet", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n" + indent(podTemplateYAML, 4), []string{"spec", "template"}},
	{"ReplicaSet", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n" + indent(podTemplateYAML, 4), []string{"spec", "template"}},
	{"ReplicationController", "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: web}\nspec:\n  selector: {app: web}\n  template:\n" + indent(podTemplateYAML, 4), []string{"spec", "template"}},
	{"Job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: web}\nspec:\n  template:\n" + indent(podTemplateYAML, 4), []string{"spec", "template"}},
	{"CronJob", "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: web}\nspec:\n  schedule: \"@hourly\"\n  jobTemplate:\n    spec:\n      template:\n" + indent(podTemplateYAML, 8), []string{"spec", "jobTemplate", "spec", "template"}},
	{"List", "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: web}\n    spec:\n      template:\n" + indent(podTemplateYAML, 8), []string{"items", "0", "spec", "template"}},
}

// runGraft runs the CLI in-process and returns stdout, failing the test
// on a non-zero exit.
func runGraft(t *testing.T, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("graft %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.Bytes()
}

func lookup(t *testing.T, v any, path []string) map[string]any {
	t.Helper()
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			v = x[int(p[0]-'0')]
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("no object at %v", path)
	}
	return m
}

// Every kind gets the same injection as a bare Pod with the same template,
// and injecting the output again changes nothing, in YAML and in JSON.
func TestInjectEveryKindLikeItsPodAndIdempotent(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var podSpec, podMeta map[string]any
	for _, w := range workloads {
		t.Run(w.kind, func(t *testing.T) {
			in := write(w.kind+".yaml", []byte(w.yaml))
			once := runGraft(t, "inject", "-f", in)
			twice := runGraft(t, "inject", "-f", write(w.kind+"-once.yaml", once))
			if !bytes.Equal(once, twice) {
				t.Errorf("inject twice differs from once:\nonce:\n%s\ntwice:\n%s", once, twice)
			}
			onceJSON := runGraft(t, "inject", "-f", in, "-o", "json")
			twiceJSON := runGraft(t, "inject", "-f", write(w.kind+"-once.json", onceJSON), "-o", "json")
			if !bytes.Equal(onceJSON, twiceJSON) {
				t.Errorf("JSON: inject twice differs from once:\nonce:\n%s\ntwice:\n%s", onceJSON, twiceJSON)
			}
			js, err := yaml.YAMLToJSON(once)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonpatch.Equal(js, onceJSON) {
				t.Errorf("-o yaml and -o json disagree:\n%s\n%s", js, onceJSON)
			}
			var obj any
			if err := json.Unmarshal(js, &obj); err != nil {
				t.Fatal(err)
			}
			tmpl := lookup(t, obj, w.path)
			spec, _ := tmpl["spec"].(map[string]any)
			meta, _ := tmpl["metadata"].(map[string]any)
			if !strings.Contains(string(mustJSON(t, spec)), `"futureField":{"kept":true}`) || !strings.Contains(string(mustJSON(t, spec)), `"cpu":"0.25"`) {
				t.Errorf("unknown field or quantity spelling lost: %s", mustJSON(t, spec))
			}
			if bytes.Equal(mustJSON(t, spec), mustJSON(t, lookup(t, mustUnmarshal(t, w.yaml), append(w.path, "spec")))) {
				t.Errorf("nothing injected into %s", w.kind)
			}
			if w.kind == "Pod" {
				podSpec, podMeta = spec, meta
				return
			}
			if podSpec == nil {
				t.Fatal("Pod case did not run first")
			}
			if !bytes.Equal(mustJSON(t, spec), mustJSON(t, podSpec)) {
				t.Errorf("template spec differs from the injected Pod's:\n%s\n%s", mustJSON(t, spec), mustJSON(t, podSpec))
			}
			delete(podMeta, "name")
			if !bytes.Equal(mustJSON(t, meta), mustJSON(t, podMeta)) {
				t.Errorf("template metadata differs from the injected Pod's:\n%s\n%s", mustJSON(t, meta), mustJSON(t, podMeta))
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustUnmarshal(t *testing.T, y string) any {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
