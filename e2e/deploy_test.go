package e2e

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Scenario 12: every kustomization (base and overlays) and every plain
// manifest under deploy/ applies to this API server with a server-side dry
// run; so does what `graft inject` makes of a Deployment and a CronJob.
func TestDeployManifestsApply(t *testing.T) {
	src := filepath.Join(repoRoot, "deploy")
	if _, err := os.Stat(filepath.Join(src, "base", "kustomization.yaml")); err != nil {
		t.Fatalf("deploy/base has no kustomization: %v", err)
	}
	// A copy, so generated certificates never land in the repository.
	tree := filepath.Join(t.TempDir(), "deploy")
	if err := os.CopyFS(tree, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	// The self-signed overlay consumes what graft certs --kustomize writes.
	selfSigned := filepath.Join(tree, "overlays", "self-signed")
	if out, err := exec.Command(graftBin(t), "certs", "--out", filepath.Join(selfSigned, "certs"), "--kustomize").CombinedOutput(); err != nil {
		t.Fatalf("graft certs --kustomize for %s: %v\n%s", selfSigned, err, out)
	}

	kustomizations, plain := deployInputs(t, tree)
	a := newApplier(t)
	for _, dir := range kustomizations {
		rel, _ := filepath.Rel(tree, dir)
		t.Run(rel, func(t *testing.T) {
			m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
			if err != nil {
				t.Fatalf("kustomize build %s: %v", rel, err)
			}
			out, err := m.AsYaml()
			if err != nil {
				t.Fatal(err)
			}
			a.applyAll(t, out)
		})
	}
	for _, f := range plain {
		rel, _ := filepath.Rel(tree, f)
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			a.applyAll(t, data)
		})
	}
	t.Run("graft-inject", func(t *testing.T) {
		cfg, err := graftConfig(env.templatesDir)
		if err != nil {
			t.Fatal(err)
		}
		configFile := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(configFile, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		for name, manifest := range map[string]string{"deployment": deploymentYAML, "cronjob": cronJobYAML} {
			t.Run(name, func(t *testing.T) {
				// The suite's configuration, as graft serve runs with it.
				cmd := exec.Command(graftBin(t), "inject", "--config", configFile, "-f", "-")
				cmd.Stdin = strings.NewReader(manifest)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("graft inject: %v\n%s", err, stderr.Bytes())
				}
				if !bytes.Contains(out, []byte(agentContainer)) {
					t.Fatalf("graft inject did not inject %s:\n%s", agentContainer, out)
				}
				a.applyAll(t, out)
			})
		}
	})
}

func graftBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("GRAFT_E2E_GRAFT")
	if bin == "" {
		t.Fatal("GRAFT_E2E_GRAFT is not set")
	}
	return bin
}

// deployInputs finds the directories kustomize can build (components are
// only built as part of an overlay) and the plain manifests that belong to
// no kustomization. Helm charts (TestChartApplies renders them) and test
// data are neither.
func deployInputs(t *testing.T, tree string) (kustomizations, plain []string) {
	t.Helper()
	var roots []string
	err := filepath.WalkDir(tree, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "Chart.yaml")); err == nil {
			return filepath.SkipDir
		}
		for _, r := range roots {
			if strings.HasPrefix(path, r+string(filepath.Separator)) {
				return nil // a kustomization's own files
			}
		}
		k := filepath.Join(path, "kustomization.yaml")
		if data, err := os.ReadFile(k); err == nil {
			roots = append(roots, path)
			if !bytes.Contains(data, []byte("kind: Component")) {
				kustomizations = append(kustomizations, path)
			}
			return nil
		}
		files, _ := filepath.Glob(filepath.Join(path, "*.y*ml"))
		plain = append(plain, files...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Drop plain files under a kustomization found later in the walk.
	kept := plain[:0]
	for _, f := range plain {
		inside := false
		for _, r := range roots {
			inside = inside || strings.HasPrefix(f, r+string(filepath.Separator))
		}
		if !inside {
			kept = append(kept, f)
		}
	}
	return kustomizations, kept
}

// applier server-side applies objects as a dry run.
type applier struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func newApplier(t *testing.T) *applier {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.cluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	disco := memory.NewMemCacheClient(env.client.Discovery())
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(disco)}
}

// applyAll dry-run applies every object in the YAML stream data. Namespaces
// are created for real first: a dry run into a namespace that does not
// exist is refused. Kinds this API server does not serve (a CRD's, such as
// cert-manager's) are reported and skipped.
func (a *applier) applyAll(t *testing.T, data []byte) {
	t.Helper()
	objs := decodeObjects(t, data)
	if len(objs) == 0 {
		t.Fatal("no objects")
	}
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			ensureNamespace(t, o.GetName())
		} else if ns := o.GetNamespace(); ns != "" {
			ensureNamespace(t, ns)
		}
	}
	applied := 0
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			t.Logf("%s %s: not served by a bare API server (needs its CRD); skipped", gvk.Kind, o.GetName())
			continue
		}
		if err != nil {
			t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
		}
		var r dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := o.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			r = a.dyn.Resource(m.Resource).Namespace(ns)
		}
		// The harness registered graft under the shipped names already; a
		// dry-run apply would merge into that object rather than check the
		// manifest, so it is checked under a name of its own.
		if o.GetKind() != "Namespace" {
			if _, err := r.Get(t.Context(), o.GetName(), metav1.GetOptions{}); err == nil {
				o = o.DeepCopy()
				o.SetName(o.GetName() + "-e2e-check")
			}
		}
		_, err = r.Apply(t.Context(), o.GetName(), o, metav1.ApplyOptions{
			FieldManager: "graft-e2e", Force: true, DryRun: []string{metav1.DryRunAll},
		})
		if err != nil {
			t.Errorf("server-side dry-run apply of %s %s/%s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
			continue
		}
		applied++
	}
	t.Logf("%d of %d objects applied (dry run)", applied, len(objs))
}

func decodeObjects(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
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
		u := &unstructured.Unstructured{Object: m}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				out = append(out, &list.Items[i])
			}
			continue
		}
		out = append(out, u)
	}
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := env.client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", name, err)
	}
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: e2e-inject-cli
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.invalid/web:1.0
          ports: [{containerPort: 8080}]
`

const cronJobYAML = `apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
  namespace: e2e-inject-cli
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: report
              image: registry.invalid/report:1.0
`
