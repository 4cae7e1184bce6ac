package cluster

import (
	"context"
	"fmt"
	"time"

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
// so Pods created afterwards are not refused for want of it.
func (c *Cluster) WaitServiceAccount(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
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
