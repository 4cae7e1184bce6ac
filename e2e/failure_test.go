package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	regv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scenario 9: with graft down, failurePolicy: Fail refuses the create with
// an error naming graft's webhook; failurePolicy: Ignore plus the shipped
// ValidatingAdmissionPolicy refuses it with the policy's message; graft
// back up, creates succeed injected.
func TestGraftDown(t *testing.T) {
	ns := optedIn(t, "e2e-failure")
	if err := env.waitInjecting(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	original := env.webhook.Webhooks[0].FailurePolicy
	policies := env.client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := env.client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if !env.cluster.GraftRunning() {
			if err := env.cluster.StartGraft(ctx); err != nil {
				t.Errorf("restart graft: %v", err)
			}
		}
		if original != nil {
			if err := setGraftFailurePolicy(ctx, *original); err != nil {
				t.Errorf("restore failure policy: %v", err)
			}
		}
		for _, err := range []error{
			bindings.Delete(ctx, env.shipped.Binding.Name, metav1.DeleteOptions{}),
			policies.Delete(ctx, env.shipped.Policy.Name, metav1.DeleteOptions{}),
		} {
			if err != nil && !isNotFound(err) {
				t.Errorf("remove policy: %v", err)
			}
		}
	})
	dryRun := func(ctx context.Context) error {
		_, err := env.client.CoreV1().Pods(ns).Create(ctx, simplePod("while-down"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	refusedWith := func(want ...string) func(context.Context) error {
		return func(ctx context.Context) error {
			err := dryRun(ctx)
			if err == nil {
				return errors.New("create was admitted")
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					return fmt.Errorf("refused, but the error does not name %q: %w", w, err)
				}
			}
			return nil
		}
	}

	if err := setGraftFailurePolicy(t.Context(), regv1.Fail); err != nil {
		t.Fatal(err)
	}
	if err := env.cluster.StopGraft(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "failurePolicy Fail to refuse creates naming the webhook", refusedWith(graftWebhookName()))

	policy := env.shipped.Policy.DeepCopy()
	binding := env.shipped.Binding.DeepCopy()
	policy.ResourceVersion, binding.ResourceVersion = "", ""
	if _, err := policies.Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	if _, err := bindings.Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create binding: %v", err)
	}
	if err := setGraftFailurePolicy(t.Context(), regv1.Ignore); err != nil {
		t.Fatal(err)
	}
	want := []string{policy.Name}
	if len(policy.Spec.Validations) > 0 && policy.Spec.Validations[0].Message != "" {
		want = append(want, policy.Spec.Validations[0].Message)
	}
	waitFor(t, "the admission policy to refuse uninjected Pods", refusedWith(want...))
	// The same refusal for a real create, and nothing stored.
	_, err := env.client.CoreV1().Pods(ns).Create(t.Context(), simplePod("refused"), metav1.CreateOptions{})
	if err == nil {
		t.Fatal("with graft down and failurePolicy Ignore, an uninjected Pod was stored despite the policy")
	}
	t.Logf("refused by the policy: %v", err)

	// Graft back up. The suite's graft serves the agent fixture on /inject,
	// which deploy/base's guarantee for enabled (the mesh proxy's sidecars)
	// rightly refuses: the policy goes before the creates that follow.
	// That the shipped policy passes graft's own Pods is
	// TestShippedPolicyInAPIServer's.
	for _, err := range []error{
		bindings.Delete(t.Context(), binding.Name, metav1.DeleteOptions{}),
		policies.Delete(t.Context(), policy.Name, metav1.DeleteOptions{}),
	} {
		if err != nil {
			t.Fatalf("remove policy: %v", err)
		}
	}
	if err := env.cluster.StartGraft(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "creates to succeed once graft is back", func(ctx context.Context) error { return dryRun(ctx) })
	createPod(t, ns, simplePod("after-restart"))
	requireAgentInjected(t, getPod(t, ns, "after-restart"))
}
