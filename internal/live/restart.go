package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/rollout"
)

// restartable is what a restart needs of a Deployment, StatefulSet or
// DaemonSet: its Pods' labels, whether a template change replaces its
// Pods, and how far its rollout is.
type restartable struct {
	// obj is the owner as read, for Events about it.
	obj        runtime.Object
	template   *corev1.PodTemplateSpec
	generation int64
	labels     map[string]string
	// onDelete: the owner replaces a Pod only when it is deleted.
	onDelete bool
	// pending says what the rollout still waits for ("" when complete,
	// as `kubectl rollout status` judges it); failed is set when it can
	// no longer complete.
	pending     string
	failed      bool
	ready, want int
}

// getOwner reads owner o.
func getOwner(ctx context.Context, c kubernetes.Interface, o rollout.Owner) (*restartable, error) {
	get := metav1.GetOptions{}
	switch o.Kind {
	case "Deployment":
		d, err := c.AppsV1().Deployments(o.Namespace).Get(ctx, o.Name, get)
		if err != nil {
			return nil, err
		}
		return deploymentState(d), nil
	case "StatefulSet":
		s, err := c.AppsV1().StatefulSets(o.Namespace).Get(ctx, o.Name, get)
		if err != nil {
			return nil, err
		}
		return statefulSetState(s), nil
	case "DaemonSet":
		d, err := c.AppsV1().DaemonSets(o.Namespace).Get(ctx, o.Name, get)
		if err != nil {
			return nil, err
		}
		return daemonSetState(d), nil
	}
	return nil, fmt.Errorf("%s is not a kind graft restarts", o.Kind)
}

// deploymentState judges a Deployment's rollout as kubectl rollout status
// does: the controller saw the latest spec, every replica is updated,
// none of an older ReplicaSet is left, every updated one is available;
// past its progress deadline it has failed.
func deploymentState(d *appsv1.Deployment) *restartable {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	r := &restartable{obj: d, template: &d.Spec.Template, generation: d.Generation, labels: d.Spec.Template.Labels,
		ready: int(min(st.UpdatedReplicas, st.AvailableReplicas)), want: int(want)}
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			r.failed, r.pending = true, "progress deadline exceeded: "+c.Message
			return r
		}
	}
	switch {
	case st.ObservedGeneration < d.Generation:
		r.pending = "waiting for the controller to observe the restart"
	case st.UpdatedReplicas < want:
		r.pending = fmt.Sprintf("%d of %d replicas updated", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		r.pending = fmt.Sprintf("%d old replicas pending termination", st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < st.UpdatedReplicas:
		r.pending = fmt.Sprintf("%d of %d updated replicas available", st.AvailableReplicas, st.UpdatedReplicas)
	}
	return r
}

// statefulSetState judges a StatefulSet's rollout as kubectl does: the
// latest spec observed, every replica ready, the replicas at and above
// the partition updated, and (without a partition) the current revision
// the updated one.
func statefulSetState(s *appsv1.StatefulSet) *restartable {
	want := int32(1)
	if s.Spec.Replicas != nil {
		want = *s.Spec.Replicas
	}
	st := s.Status
	r := &restartable{obj: s, template: &s.Spec.Template, generation: s.Generation, labels: s.Spec.Template.Labels, ready: int(min(st.UpdatedReplicas, st.ReadyReplicas)), want: int(want),
		onDelete: s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType}
	partition := int32(0)
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = *ru.Partition
	}
	switch {
	case st.ObservedGeneration < s.Generation:
		r.pending = "waiting for the controller to observe the restart"
	case st.ReadyReplicas < want || st.AvailableReplicas < want:
		r.pending = fmt.Sprintf("%d of %d replicas ready", st.ReadyReplicas, want)
	case st.UpdatedReplicas < want-partition:
		r.pending = fmt.Sprintf("%d of %d replicas updated", st.UpdatedReplicas, want-partition)
	case partition == 0 && st.UpdateRevision != st.CurrentRevision:
		r.pending = fmt.Sprintf("revision %s not yet current", st.UpdateRevision)
	}
	return r
}

// daemonSetState judges a DaemonSet's rollout as kubectl does: the latest
// spec observed, a Pod updated and available on every node that should
// run one.
func daemonSetState(d *appsv1.DaemonSet) *restartable {
	st := d.Status
	r := &restartable{obj: d, template: &d.Spec.Template, generation: d.Generation, labels: d.Spec.Template.Labels,
		ready: int(min(st.UpdatedNumberScheduled, st.NumberAvailable)),
		want:  int(st.DesiredNumberScheduled), onDelete: d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType}
	switch {
	case st.ObservedGeneration < d.Generation:
		r.pending = "waiting for the controller to observe the restart"
	case st.UpdatedNumberScheduled < st.DesiredNumberScheduled:
		r.pending = fmt.Sprintf("%d of %d Pods updated", st.UpdatedNumberScheduled, st.DesiredNumberScheduled)
	case st.NumberAvailable < st.DesiredNumberScheduled:
		r.pending = fmt.Sprintf("%d of %d Pods available", st.NumberAvailable, st.DesiredNumberScheduled)
	}
	return r
}

// budgets reads the PodDisruptionBudgets of namespace ns.
func budgets(ctx context.Context, c kubernetes.Interface, ns string) ([]rollout.Budget, error) {
	l, err := c.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PodDisruptionBudgets in %s: %w", ns, err)
	}
	out := make([]rollout.Budget, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, budgetOf(&l.Items[i]))
	}
	return out, nil
}

func budgetOf(p *policyv1.PodDisruptionBudget) rollout.Budget {
	b := rollout.Budget{Name: p.Name, DisruptionsAllowed: p.Status.DisruptionsAllowed,
		Current: p.Status.ObservedGeneration >= p.Generation}
	if p.Spec.Selector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector); err == nil {
			b.Selector = sel
		}
	}
	return b
}

// restartPatch sets the pod-template annotation `kubectl rollout restart`
// sets, so the controller replaces every Pod from the template.
func restartPatch(at time.Time) ([]byte, error) {
	return json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{names.RestartedAt: at.Format(time.RFC3339)}}}}})
}

// restartOwner patches owner o's pod template as kubectl rollout restart
// does; dryRun is the patch's (nil: a real one).
func restartOwner(ctx context.Context, c kubernetes.Interface, o rollout.Owner, at time.Time, dryRun []string) error {
	patch, err := restartPatch(at)
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: "graft", DryRun: dryRun}
	switch o.Kind {
	case "Deployment":
		_, err = c.AppsV1().Deployments(o.Namespace).Patch(ctx, o.Name, types.StrategicMergePatchType, patch, opts)
	case "StatefulSet":
		_, err = c.AppsV1().StatefulSets(o.Namespace).Patch(ctx, o.Name, types.StrategicMergePatchType, patch, opts)
	case "DaemonSet":
		_, err = c.AppsV1().DaemonSets(o.Namespace).Patch(ctx, o.Name, types.StrategicMergePatchType, patch, opts)
	default:
		err = errors.New("not a kind graft restarts")
	}
	if err != nil {
		return fmt.Errorf("restart %s: %w", o, err)
	}
	return nil
}
