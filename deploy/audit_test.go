package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// overlay writes an overlay of the given kustomization body into a copy
// of deploy/ and builds it.
func overlay(t *testing.T, body string) output {
	t.Helper()
	dir := filepath.Join(copyTree(t), "overlays", "test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + body
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	return kustomize(t, dir)
}

// TestOverlayImageOverride: the command the docs give to change graft's
// image in an overlay (`kustomize edit set image
// ghcr.io/graftdev/graft=...`) changes graft's and the audit exporter's,
// and the base and the audit component ship the same image.
func TestOverlayImageOverride(t *testing.T) {
	images := func(out output) map[string]string {
		got := map[string]string{}
		for _, o := range out.find("Deployment") {
			d := one[appsv1.Deployment](t, out, "Deployment", o.name)
			got[o.name] = d.Spec.Template.Spec.Containers[0].Image
		}
		return got
	}
	shipped := images(overlay(t, "resources: [../cert-manager]\ncomponents: [../../components/audit]\n"))
	if len(shipped) != 2 || shipped["graft"] != shipped["graft-audit"] || !strings.HasPrefix(shipped["graft"], "ghcr.io/graftdev/graft:") {
		t.Errorf("shipped images %v: want graft's image in both Deployments", shipped)
	}
	set := images(overlay(t, "resources: [../cert-manager]\ncomponents: [../../components/audit]\n"+
		"images:\n  - name: ghcr.io/graftdev/graft\n    newName: registry.example/graft\n    newTag: v9.9.9\n"))
	for name, image := range set {
		if image != "registry.example/graft:v9.9.9" {
			t.Errorf("Deployment %s runs %s after the documented image override", name, image)
		}
	}
}

// TestAuditExporter: the audit component runs `graft audit --serve` as
// the read-only audit ServiceAccount, on graft's own configuration and
// templates, under the restricted Pod Security level, with labels graft's
// own selectors do not match; the monitoring component scrapes it.
func TestAuditExporter(t *testing.T) {
	out := overlay(t, "resources: [../cert-manager]\ncomponents: [../../components/audit, ../../components/monitoring]\n")
	graft := one[appsv1.Deployment](t, out, "Deployment", "graft")
	exp := one[appsv1.Deployment](t, out, "Deployment", "graft-audit")
	ps := exp.Spec.Template.Spec
	if ps.ServiceAccountName != "graft-audit" {
		t.Errorf("serviceAccountName %q, want graft-audit", ps.ServiceAccountName)
	}
	c := ps.Containers[0]
	for _, want := range []string{"audit", "--serve=:8080", "--config=/etc/graft/config/config.yaml", "--templates-dir=/etc/graft/templates"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	_, expSvc := checkCompanion(t, out, graft, exp, "the exporter")
	sm := oneLoose[serviceMonitor](t, out, "ServiceMonitor", "graft-audit")
	if !selects(&sm.Spec.Selector, expSvc.Labels) || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" ||
		!sm.Spec.Endpoints[0].HonorLabels {
		t.Errorf("ServiceMonitor graft-audit %+v: want the exporter's Service, port metrics, honorLabels (graft_audit_pods' own namespace label)", sm.Spec)
	}
}

// checkCompanion checks a Deployment shipped beside graft's (the audit
// exporter, the watchdog), what names it in messages: it mounts graft's
// ConfigMaps under the same volume names, meets the restricted Pod
// Security level, has a memory limit, is not selected by graft's Service
// or Deployment, and has a Service of its own name selecting exactly its
// Pods. It returns graft's Service and that one.
func checkCompanion(t *testing.T, out output, graft, dep appsv1.Deployment, what string) (graftSvc, own corev1.Service) {
	t.Helper()
	ps := dep.Spec.Template.Spec
	c := ps.Containers[0]
	mounted := map[string]string{}
	for _, v := range ps.Volumes {
		if v.ConfigMap != nil {
			mounted[v.Name] = v.ConfigMap.Name
		}
	}
	for _, v := range graft.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && mounted[v.Name] != v.ConfigMap.Name {
			t.Errorf("%s mounts %q as %s, graft mounts %q", what, mounted[v.Name], v.Name, v.ConfigMap.Name)
		}
	}
	sc := c.SecurityContext
	if ps.SecurityContext == nil || !deref(ps.SecurityContext.RunAsNonRoot) || sc == nil || deref(sc.AllowPrivilegeEscalation) ||
		!deref(sc.ReadOnlyRootFilesystem) || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		ps.SecurityContext.SeccompProfile == nil || ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s does not meet the restricted Pod Security level", what)
	}
	if c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s has no memory limit", what)
	}
	graftSvc = one[corev1.Service](t, out, "Service", "graft")
	if selects(&metav1.LabelSelector{MatchLabels: graftSvc.Spec.Selector}, dep.Spec.Template.Labels) ||
		selects(graft.Spec.Selector, dep.Spec.Template.Labels) {
		t.Errorf("graft's Service or Deployment selects the Pods of %s", what)
	}
	own = one[corev1.Service](t, out, "Service", dep.Name)
	if !selects(&metav1.LabelSelector{MatchLabels: own.Spec.Selector}, dep.Spec.Template.Labels) ||
		selects(&metav1.LabelSelector{MatchLabels: own.Spec.Selector}, graft.Spec.Template.Labels) {
		t.Errorf("the Service of %s does not select exactly its Pods", what)
	}
	return graftSvc, own
}

// serviceMonitor is what the tests read of a Prometheus Operator
// ServiceMonitor.
type serviceMonitor struct {
	Spec struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port        string `json:"port"`
			HonorLabels bool   `json:"honorLabels"`
		} `json:"endpoints"`
	} `json:"spec"`
}
