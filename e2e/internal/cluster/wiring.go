package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/proc"
)

// RegisterGraft registers the shipped webhook configuration pointed at this
// cluster's graft and returns it as stored.
func (c *Cluster) RegisterGraft(ctx context.Context, s *Shipped) (*admissionv1.MutatingWebhookConfiguration, error) {
	wh := s.LoopbackWebhook(c.GraftAddr(), c.GraftCA())
	got, err := c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, wh, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("register webhook: %w", err)
	}
	return got, nil
}

// CreateNamespace creates namespace name with labels and returns once its
// default ServiceAccount exists, so Pods can be created in it.
func (c *Cluster) CreateNamespace(ctx context.Context, name string, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	return c.WaitServiceAccount(ctx, name)
}

// WaitInjecting polls a dry-run Pod create in ns until it comes back with
// graft's status annotation: the API server picks up registrations and
// namespace labels asynchronously, and this is the proof they are in
// effect. It gives up after a minute.
func (c *Cluster) WaitInjecting(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "registry.invalid/probe:1"}}},
	}
	return proc.Poll(ctx, nil, 200*time.Millisecond, func(ctx context.Context) error {
		p, err := c.Client.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if _, ok := p.Annotations[names.Status]; !ok {
			return errors.New("dry-run Pod came back without " + names.Status)
		}
		return nil
	})
}
