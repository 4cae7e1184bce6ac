package e2e

import (
	"context"
	"testing"
	"time"

	regv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// graftWebhookName is the name of graft's (first) webhook as shipped: what
// the API server names in errors and metrics.
func graftWebhookName() string { return env.webhook.Webhooks[0].Name }

// scopedGraftWebhook is a copy of graft's shipped webhook for the namespace
// ns alone, calling path on graft. Tests that change a webhook's settings
// use one in an unlabelled namespace, so the shared registration, and the
// other tests, are left alone.
func scopedGraftWebhook(name, ns, path string) regv1.MutatingWebhook {
	w := *env.webhook.Webhooks[0].DeepCopy()
	w.Name = name
	url := "https://" + env.cluster.GraftAddr() + path
	w.ClientConfig.URL = &url
	w.NamespaceSelector = namespaceNamed(ns)
	return w
}

// registerWebhooks creates a MutatingWebhookConfiguration for the test's
// lifetime.
func registerWebhooks(t *testing.T, name string, hooks ...regv1.MutatingWebhook) {
	t.Helper()
	client := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	cfg := &regv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
	if _, err := client.Create(t.Context(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("register %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("unregister %s: %v", name, err)
		}
	})
}

// setGraftFailurePolicy sets the failure policy of every webhook in graft's
// shared registration.
func setGraftFailurePolicy(ctx context.Context, p regv1.FailurePolicyType) error {
	client := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	cfg, err := client.Get(ctx, env.webhook.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].FailurePolicy = &p
	}
	_, err = client.Update(ctx, cfg, metav1.UpdateOptions{})
	return err
}
