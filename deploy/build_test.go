package deploy

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/webhook/certgen"
)

// object is one resource of a kustomize build's output.
type object struct {
	kind, namespace, name string
	yaml                  []byte
}

// output is a kustomize build's resources, in order.
type output []object

// kustomize builds the kustomization in dir, as `kubectl kustomize dir` does.
func kustomize(t *testing.T, dir string) output {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out output
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatalf("%s: %v", r.CurId(), err)
		}
		out = append(out, object{kind: r.GetKind(), namespace: r.GetNamespace(), name: r.GetName(), yaml: y})
	}
	return out
}

// find returns the objects of a kind.
func (o output) find(kind string) []object {
	var found []object
	for _, obj := range o {
		if obj.kind == kind {
			found = append(found, obj)
		}
	}
	return found
}

// one decodes the only object of kind and name into T, strictly: a field
// the Kubernetes type does not have is an error, as the API server's strict
// field validation would report.
func one[T any](t *testing.T, o output, kind, name string) T {
	t.Helper()
	return decodeOne[T](t, o, kind, name, func(y []byte, v any) error { return yaml.UnmarshalStrict(y, v) })
}

// oneLoose is one for kinds without a Go type here (cert-manager's): T
// declares only the fields a test reads.
func oneLoose[T any](t *testing.T, o output, kind, name string) T {
	t.Helper()
	return decodeOne[T](t, o, kind, name, func(y []byte, v any) error { return yaml.Unmarshal(y, v) })
}

func decodeOne[T any](t *testing.T, o output, kind, name string, unmarshal func([]byte, any) error) T {
	t.Helper()
	var v T
	n := 0
	for _, obj := range o.find(kind) {
		if obj.name != name {
			continue
		}
		n++
		if err := unmarshal(obj.yaml, &v); err != nil {
			t.Fatalf("%s %s: %v", kind, name, err)
		}
	}
	if n != 1 {
		t.Fatalf("%s %s: found %d, want 1", kind, name, n)
	}
	return v
}

// selfSignedTree copies deploy/ into a temporary directory and writes what
// `graft certs --kustomize` would into the self-signed overlay's certs/. It
// returns the copy's root and the bundle.
func selfSignedTree(t *testing.T) (string, *certgen.Bundle) {
	t.Helper()
	root := copyTree(t)
	b, err := certgen.Generate(certgen.Options{DNSNames: certgen.ServiceDNSNames("graft", "graft-system")})
	if err != nil {
		t.Fatal(err)
	}
	certs := filepath.Join(root, "overlays", "self-signed", "certs")
	if err := b.WriteKustomize(certs, certgen.KustomizeOptions{Namespace: "graft-system"}); err != nil {
		t.Fatal(err)
	}
	return root, b
}

// copyTree copies deploy/ into a temporary directory and returns the copy.
func copyTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "deploy")
	if err := os.CopyFS(root, os.DirFS(".")); err != nil {
		t.Fatal(err)
	}
	return root
}
