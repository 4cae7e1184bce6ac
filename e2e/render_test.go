package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// renderTemplateName is the suite's own template, served by the profile
// renderProfile. It passes lint: its string parameter's pattern admits
// no YAML syntax but is rendered with its default only, so a Pod can
// choose a value that renders a container name no API server accepts.
const (
	renderTemplateName = "e2e-render"
	renderProfile      = "e2e-render"
	renderTemplate     = `name: e2e-render
description: A native sidecar whose name takes a suffix from the Pod.
parameters:
  - {name: suffix, type: string, default: "", pattern: '^[A-Za-z0-9_-]*$', description: Appended to the sidecar's name.}
fragment: |
  initContainers:
    - {name: "graft-e2e-render{{ .suffix }}", image: registry.invalid/render:1, restartPolicy: Always,
       securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}}
`
)

// writeSuiteTemplates writes the suite's templates directory under dir
// and returns its path.
func writeSuiteTemplates(dir string) (string, error) {
	tdir := filepath.Join(dir, "templates")
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		return "", err
	}
	// The engine's golden corpus uses test templates of its own.
	fixtures, err := filepath.Glob(filepath.Join(repoRoot, "inject", "testdata", "templates", "*.yaml"))
	if err != nil || len(fixtures) == 0 {
		return "", fmt.Errorf("inject/testdata/templates: %v", err)
	}
	for _, f := range fixtures {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(tdir, filepath.Base(f)), data, 0o644); err != nil {
			return "", err
		}
	}
	return tdir, os.WriteFile(filepath.Join(tdir, renderTemplateName+".yaml"), []byte(renderTemplate), 0o644)
}

// Issue 12: a Pod whose parameter renders an invalid fragment is denied by
// graft with a message naming the template, the annotation and the value;
// the API server never receives the invalid patch, so what the user reads
// is graft's reason, not the API server's validation error (422 Invalid)
// about a container graft would have added.
func TestInvalidRenderIsDeniedByGraft(t *testing.T) {
	ns := newNamespace(t, "e2e-render", nil)
	registerWebhooks(t, "graft-e2e-render", scopedGraftWebhook("render.e2e.graft.dev", ns, "/inject/"+renderProfile))
	if err := env.waitInjecting(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	annotation := "graft.dev/" + renderTemplateName + ".suffix"
	pods := env.client.CoreV1().Pods(ns)

	ok := simplePod("valid-suffix")
	ok.Annotations = map[string]string{annotation: "-b"}
	if _, err := pods.Create(t.Context(), ok, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a valid suffix: %v", err)
	}
	if got := getPod(t, ns, ok.Name); len(got.Spec.InitContainers) != 1 || got.Spec.InitContainers[0].Name != "graft-e2e-render-b" {
		t.Fatalf("a valid suffix: stored containers %s", containerNames(got))
	}

	bad := simplePod("invalid-suffix")
	bad.Annotations = map[string]string{annotation: "_X"}
	_, err := pods.Create(t.Context(), bad, metav1.CreateOptions{})
	if err == nil {
		t.Fatal("a Pod whose parameter renders an invalid container name was admitted")
	}
	want := `admission webhook "render.e2e.graft.dev" denied the request: annotation ` + annotation +
		`="_X": template e2e-render: initContainers[graft-e2e-render_X]: name: a lowercase RFC 1123 label`
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("create refused with %v (reason %s)\nwant a 400 from graft containing %q", err, apierrors.ReasonForError(err), want)
	}
	if _, err := pods.Get(t.Context(), bad.Name, metav1.GetOptions{}); !isNotFound(err) {
		t.Fatalf("the denied Pod exists (get: %v)", err)
	}
}
