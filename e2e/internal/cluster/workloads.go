package cluster

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/proc"
)

// WaitRolledOut waits until Deployment ns/name has rolled out as
// `kubectl rollout status` judges it: the controller has seen its latest
// spec, and every replica is updated, Ready and available, none of an
// older ReplicaSet left. It returns the Deployment as it then is.
func (c *Cluster) WaitRolledOut(ctx context.Context, ns, name string) (*appsv1.Deployment, error) {
	var d *appsv1.Deployment
	err := proc.Poll(ctx, c.controllers, 100*time.Millisecond, func(ctx context.Context) error {
		var err error
		if d, err = c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		return RolloutPending(d)
	})
	if err != nil {
		return d, fmt.Errorf("deployment %s/%s: %w", ns, name, err)
	}
	return d, nil
}

// RolloutPending says what a Deployment's rollout still waits for, nil
// when it is complete.
func RolloutPending(d *appsv1.Deployment) error {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	switch {
	case st.ObservedGeneration < d.Generation:
		return fmt.Errorf("generation %d not observed yet (%d)", d.Generation, st.ObservedGeneration)
	case st.UpdatedReplicas < want:
		return fmt.Errorf("%d of %d replicas updated", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		return fmt.Errorf("%d old replicas pending termination", st.Replicas-st.UpdatedReplicas)
	case st.ReadyReplicas < want || st.AvailableReplicas < want:
		return fmt.Errorf("%d of %d replicas ready, %d available", st.ReadyReplicas, want, st.AvailableReplicas)
	}
	return nil
}

// WaitPodsReady waits until n Pods of namespace ns match selector (a
// label selector in its string form) and each is bound to a node and
// Ready, and returns them.
func (c *Cluster) WaitPodsReady(ctx context.Context, ns, selector string, n int) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	err := proc.Poll(ctx, nil, 200*time.Millisecond, func(ctx context.Context) error {
		list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		pods = list.Items
		ready := 0
		for i := range pods {
			if pods[i].DeletionTimestamp == nil && PodReady(&pods[i]) {
				ready++
			}
		}
		if ready != n || len(pods) != n {
			return fmt.Errorf("%d Pods, %d of them Ready; want %d Ready", len(pods), ready, n)
		}
		return nil
	})
	if err != nil {
		return pods, fmt.Errorf("pods %s in %s: %w", selector, ns, err)
	}
	return pods, nil
}

// PodReady: bound to a node and its Ready condition true, as the kubelet
// (here kwok) reports it.
func PodReady(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
