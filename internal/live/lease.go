package live

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderElect runs lead while this process holds the Lease name in the
// cluster's namespace as identity, and follow once it stops holding it.
// It returns nil when ctx ends (releasing the Lease), and an error when
// the Lease is lost while ctx goes on: the process should then exit, so
// nothing it started as leader outlives the lease.
func (cl *Cluster) LeaderElect(ctx context.Context, name, identity string, lead func(context.Context), follow func()) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cl.namespace, Name: name},
		Client:     cl.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock,
		// client-go's defaults for controllers: a new leader within 15s
		// of the old one's last renewal.
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
		Name:            name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: lead,
			OnStoppedLeading: follow,
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	le.Run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("leader election: lost the lease " + cl.namespace + "/" + name)
}
