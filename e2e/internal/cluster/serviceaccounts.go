package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/proc"
)

// defaultServiceAccount is the ServiceAccount a Pod runs as unless it names
// another; the ServiceAccount admission plugin refuses Pods whose
// ServiceAccount does not exist. kube-controller-manager's serviceaccount
// controller makes it in every namespace.
const defaultServiceAccount = "default"

// WaitServiceAccount waits until namespace ns has its default
// ServiceAccount. Once the API server returns it, the ServiceAccount
// plugin finds it too (it falls back to a live read when its cache lags),
// so Pods created afterwards are not refused for want of it. Without a
// controller manager (APIOnly) it creates the ServiceAccount itself, as
// the serviceaccount controller would.
func (c *Cluster) WaitServiceAccount(ctx context.Context, ns string) error {
	if c.opts.APIOnly {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: defaultServiceAccount}}
		if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: default ServiceAccount: %w", ns, err)
		}
		return nil
	}
	// The minute only bounds a hang: the controller makes it within a
	// moment on an idle machine.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := proc.Poll(ctx, c.controllers, 20*time.Millisecond, func(ctx context.Context) error {
		_, err := c.Client.CoreV1().ServiceAccounts(ns).Get(ctx, defaultServiceAccount, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("namespace %s: default ServiceAccount: %w", ns, err)
	}
	return nil
}
