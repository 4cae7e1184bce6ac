package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// tool returns the path of an external tool (helm, promtool) that `make
// unit` builds into .cache/bin and names in env. Without it the test is
// skipped, except on CI, where a skipped check would pass unnoticed.
func tool(t *testing.T, env string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set; `make unit` builds the tool and sets it", env)
		}
		t.Skipf("%s is not set; run `make unit`, which builds the tool and sets it", env)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	return path
}

// run runs a tool with env added to the environment and returns its
// standard output; a failure reports the command and its standard error.
func run(t *testing.T, env []string, name string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &toolError{cmd: strings.Join(append([]string{name}, args...), " "), err: err, stderr: stderr.String()}
	}
	return out, nil
}

type toolError struct {
	cmd, stderr string
	err         error
}

func (e *toolError) Error() string { return e.cmd + ": " + e.err.Error() + "\n" + e.stderr }
func (e *toolError) Unwrap() error { return e.err }

// parseObjects splits a YAML stream of Kubernetes objects (helm template's
// output) into an output, as kustomize hands them over.
func parseObjects(t *testing.T, data []byte) output {
	t.Helper()
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out output
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("decode: %v", err)
		}
		if m == nil {
			continue
		}
		y, err := sigsyaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		meta, _ := m["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		ns, _ := meta["namespace"].(string)
		kind, _ := m["kind"].(string)
		out = append(out, object{kind: kind, namespace: ns, name: name, yaml: y})
	}
}
