package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/graftdev/graft/internal/proc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// defaultServiceAccount is the ServiceAccount a Pod runs as unless it names
// another; the ServiceAccount admission plugin refuses Pods whose
// ServiceAccount does not exist.
const defaultServiceAccount = "default"

// serviceAccounts does the part of kube-controller-manager's
// serviceaccount controller that admission needs: every namespace, present
// or future, gets its default ServiceAccount. (Token Secrets and the root
// CA ConfigMap matter only to running Pods, which this cluster never runs.)
type serviceAccounts struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	queue   workqueue.TypedRateLimitingInterface[string]
	stop    chan struct{}
	done    sync.WaitGroup
}

// startServiceAccounts starts the controller and returns once it has seen
// every existing namespace.
func startServiceAccounts(ctx context.Context, client kubernetes.Interface) (*serviceAccounts, error) {
	c := &serviceAccounts{
		client:  client,
		factory: informers.NewSharedInformerFactory(client, 0),
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		stop:    make(chan struct{}),
	}
	enqueue := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp == nil {
			c.queue.Add(ns.Name)
		}
	}
	inf := c.factory.Core().V1().Namespaces().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, fmt.Errorf("serviceaccounts: %w", err)
	}
	c.factory.Start(c.stop)
	for typ, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			c.shutdown()
			return nil, fmt.Errorf("serviceaccounts: %v informer never synced", typ)
		}
	}
	c.done.Go(c.work)
	return c, nil
}

// work creates each queued namespace's default ServiceAccount, retrying
// with backoff until it exists or the namespace is gone.
func (c *serviceAccounts) work() {
	for {
		ns, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: defaultServiceAccount, Namespace: ns}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
		cancel()
		switch {
		case err == nil, apierrors.IsAlreadyExists(err), apierrors.IsNotFound(err):
			c.queue.Forget(ns)
		default:
			// A terminating namespace refuses new objects too; its
			// informer update stops the retries once it is gone.
			c.queue.AddRateLimited(ns)
		}
		c.queue.Done(ns)
	}
}

// shutdown stops the informer and the worker and waits for both.
func (c *serviceAccounts) shutdown() {
	close(c.stop)
	c.queue.ShutDown()
	c.done.Wait()
	c.factory.Shutdown()
}

// WaitServiceAccount waits until namespace ns has its default
// ServiceAccount. Once the API server returns it, the ServiceAccount
// plugin finds it too (it falls back to a live read when its cache lags),
// so Pods created afterwards are not refused for want of it.
func (c *Cluster) WaitServiceAccount(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := proc.Poll(ctx, nil, 20*time.Millisecond, func(ctx context.Context) error {
		_, err := c.Client.CoreV1().ServiceAccounts(ns).Get(ctx, defaultServiceAccount, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("namespace %s: default ServiceAccount: %w", ns, err)
	}
	return nil
}
