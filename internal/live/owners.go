package live

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/graftdev/graft/audit"
)

// owners maps the controllers that have controllers of their own to
// those: ReplicaSets to their Deployments, Jobs to their CronJobs. It
// keeps one entry per such object, not the objects.
type owners struct {
	parent map[types.UID]audit.Workload
}

// loadOwners LISTs ReplicaSets and Jobs in namespace ("" all), in pages.
func loadOwners(ctx context.Context, c kubernetes.Interface, namespace string, chunk int64) (*owners, error) {
	o := &owners{parent: map[types.UID]audit.Workload{}}
	keep := func(uid types.UID, refs []metav1.OwnerReference) {
		if ref := metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: refs}); ref != nil {
			o.parent[uid] = audit.Workload{Kind: ref.Kind, Name: ref.Name}
		}
	}
	err := listPages(ctx, chunk, func(ctx context.Context, opts metav1.ListOptions) (*appsv1.ReplicaSetList, string, error) {
		l, err := c.AppsV1().ReplicaSets(namespace).List(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		return l, l.Continue, nil
	}, func(l *appsv1.ReplicaSetList) error {
		for i := range l.Items {
			keep(l.Items[i].UID, l.Items[i].OwnerReferences)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = listPages(ctx, chunk, func(ctx context.Context, opts metav1.ListOptions) (*batchv1.JobList, string, error) {
		l, err := c.BatchV1().Jobs(namespace).List(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		return l, l.Continue, nil
	}, func(l *batchv1.JobList) error {
		for i := range l.Items {
			keep(l.Items[i].UID, l.Items[i].OwnerReferences)
		}
		return nil
	})
	return o, err
}

// workload is the top owner of an object with these ownerReferences
// (name is the object's own, for a bare Pod).
func (o *owners) workload(name string, refs []metav1.OwnerReference) audit.Workload {
	ref := metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: refs})
	if ref == nil {
		return audit.Workload{Kind: "Pod", Name: name}
	}
	if p, ok := o.parent[ref.UID]; ok {
		return p
	}
	return audit.Workload{Kind: ref.Kind, Name: ref.Name}
}
