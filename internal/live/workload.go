package live

import (
	"context"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/graftdev/graft/audit"
)

// TemplatePointer is the JSON pointer of kind's Pod template in its
// object (kind as ParseRef returns it): where the patch explain shows
// for a workload applies. "" for a Pod.
func TemplatePointer(kind string) string {
	switch kind {
	case "Pod":
		return ""
	case "CronJob":
		return "/spec/jobTemplate/spec/template"
	}
	return "/spec/template"
}

// WorkloadPods hands each Pod the workload kind/name controls (itself, or
// through its ReplicaSets or Jobs), as it runs, to each, LISTing Pods in
// pages of chunk: memory holds one page. A Pod has none.
func (cl *Cluster) WorkloadPods(ctx context.Context, kind, name string, chunk int64, each func(audit.Pod) error) error {
	if kind == "Pod" {
		return nil
	}
	owners, sel, err := cl.podOwners(ctx, kind, name, chunk)
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", strings.ToLower(kind), cl.namespace, name, err)
	}
	err = listPages(ctx, chunk, func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, string, error) {
		opts.LabelSelector = sel.String()
		l, err := cl.client.CoreV1().Pods(cl.namespace).List(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		return l, l.Continue, nil
	}, func(l *corev1.PodList) error {
		for i := range l.Items {
			ref := metav1.GetControllerOfNoCopy(&l.Items[i])
			if ref == nil || !owners[ref.UID] {
				continue
			}
			p, err := auditPod(&l.Items[i])
			if err != nil {
				return err
			}
			if err := each(p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing the Pods of %s %s/%s: %w", strings.ToLower(kind), cl.namespace, name, err)
	}
	return nil
}

// podOwners are the uids of the controllers of kind/name's Pods (the
// workload, or its ReplicaSets or Jobs), and a selector its Pods match.
func (cl *Cluster) podOwners(ctx context.Context, kind, name string, chunk int64) (map[types.UID]bool, labels.Selector, error) {
	c, ns, get := cl.client, cl.namespace, metav1.GetOptions{}
	var uid types.UID
	var sel *metav1.LabelSelector
	switch kind {
	case "Deployment":
		d, err := c.AppsV1().Deployments(ns).Get(ctx, name, get)
		if err != nil {
			return nil, nil, err
		}
		s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return nil, nil, err
		}
		owners := map[types.UID]bool{}
		rs, err := c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: s.String()})
		if err != nil {
			return nil, nil, err
		}
		for i := range rs.Items {
			if ref := metav1.GetControllerOfNoCopy(&rs.Items[i]); ref != nil && ref.UID == d.UID {
				owners[rs.Items[i].UID] = true
			}
		}
		return owners, s, nil
	case "CronJob":
		// Its Jobs' selectors are their own: look at every Pod of the
		// namespace, and keep its Jobs'.
		cj, err := c.BatchV1().CronJobs(ns).Get(ctx, name, get)
		if err != nil {
			return nil, nil, err
		}
		owners := map[types.UID]bool{}
		err = listPages(ctx, chunk, func(ctx context.Context, opts metav1.ListOptions) (*batchv1.JobList, string, error) {
			l, err := c.BatchV1().Jobs(ns).List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return l, l.Continue, nil
		}, func(l *batchv1.JobList) error {
			for i := range l.Items {
				if ref := metav1.GetControllerOfNoCopy(&l.Items[i]); ref != nil && ref.UID == cj.UID {
					owners[l.Items[i].UID] = true
				}
			}
			return nil
		})
		return owners, labels.Everything(), err
	case "StatefulSet":
		s, err := c.AppsV1().StatefulSets(ns).Get(ctx, name, get)
		if err != nil {
			return nil, nil, err
		}
		uid, sel = s.UID, s.Spec.Selector
	case "DaemonSet":
		d, err := c.AppsV1().DaemonSets(ns).Get(ctx, name, get)
		if err != nil {
			return nil, nil, err
		}
		uid, sel = d.UID, d.Spec.Selector
	case "ReplicaSet":
		r, err := c.AppsV1().ReplicaSets(ns).Get(ctx, name, get)
		if err != nil {
			return nil, nil, err
		}
		uid, sel = r.UID, r.Spec.Selector
	case "Job":
		j, err := c.BatchV1().Jobs(ns).Get(ctx, name, get)
		if err != nil {
			return nil, nil, err
		}
		uid, sel = j.UID, j.Spec.Selector
	default:
		return nil, nil, fmt.Errorf("not a workload kind: %s", kind)
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, nil, err
	}
	return map[types.UID]bool{uid: true}, s, nil
}
