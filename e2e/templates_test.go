package e2e

import (
	"strings"
	"testing"

	regv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/names"
)

// Scenario 8: every built-in template, injected on its own through its
// profile (/inject/e2e-<template>), gives a Pod the API server accepts:
// its validation is the schema check of what the template renders.
func TestEveryBuiltinTemplateIsAccepted(t *testing.T) {
	if len(env.templates) == 0 {
		t.Fatal("no built-in templates")
	}
	var hooks []regv1.MutatingWebhook
	nsOf := map[string]string{}
	for _, tpl := range env.templates {
		ns := newNamespace(t, "e2e-template-"+tpl, nil)
		nsOf[tpl] = ns
		hooks = append(hooks, scopedGraftWebhook(tpl+".templates.e2e.graft.dev", ns, "/inject/"+templateProfile(tpl)))
	}
	registerWebhooks(t, "graft-e2e-templates", hooks...)

	for _, tpl := range env.templates {
		t.Run(tpl, func(t *testing.T) {
			ns := nsOf[tpl]
			if err := env.waitInjecting(t.Context(), ns); err != nil {
				t.Fatalf("profile %s never injected: %v", templateProfile(tpl), err)
			}
			p := simplePod("with-"+tpl, "app", "worker")
			p.Annotations = map[string]string{"team": "e2e"}
			if _, err := env.client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
				t.Fatalf("the API server refused a Pod injected with %s: %v", tpl, err)
			}
			got := getPod(t, ns, p.Name)
			status, ok := got.Annotations[names.Status]
			if !ok {
				t.Fatalf("stored Pod has no %s annotation: %v", names.Status, got.Annotations)
			}
			if !strings.Contains(status, tpl) {
				t.Fatalf("%s = %q does not name template %s", names.Status, status, tpl)
			}
			if got.Annotations["team"] != "e2e" {
				t.Fatalf("foreign annotation lost: %v", got.Annotations)
			}
			t.Logf("%s: stored containers %s, %d volumes", tpl, containerNames(got), len(got.Spec.Volumes))
		})
	}
}
