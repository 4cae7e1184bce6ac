package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
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
	nodes, err := kio.FromBytes(data)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	var out output
	for _, n := range nodes {
		y, err := n.String()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, object{kind: n.GetKind(), namespace: n.GetNamespace(), name: n.GetName(), yaml: []byte(y)})
	}
	return out
}
