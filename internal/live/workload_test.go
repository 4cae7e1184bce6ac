package live

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/graftdev/graft/audit"
)

func controlledBy(kind, name string, uid types.UID) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{Kind: kind, Name: name, UID: uid, Controller: &yes}}
}

func meta(name string, uid types.UID, owners []metav1.OwnerReference, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "apps", Name: name, UID: uid, OwnerReferences: owners, Labels: labels}
}

func podOf(name string, owners []metav1.OwnerReference, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: meta(name, types.UID("pod-"+name), owners, labels),
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}}
}

// WorkloadPods hands over the Pods a workload controls, through its
// ReplicaSets or Jobs, and no others: not another workload's of the same
// labels, nor a bare Pod's.
func TestWorkloadPods(t *testing.T) {
	web := map[string]string{"app": "web"}
	sel := &metav1.LabelSelector{MatchLabels: web}
	objects := []runtime.Object{
		&appsv1.Deployment{ObjectMeta: meta("web", "d-web", nil, web), Spec: appsv1.DeploymentSpec{Selector: sel}},
		// The Deployment's old and new ReplicaSets, and one of the same
		// labels that another Deployment controls.
		&appsv1.ReplicaSet{ObjectMeta: meta("web-1", "rs-1", controlledBy("Deployment", "web", "d-web"), web), Spec: appsv1.ReplicaSetSpec{Selector: sel}},
		&appsv1.ReplicaSet{ObjectMeta: meta("web-2", "rs-2", controlledBy("Deployment", "web", "d-web"), web), Spec: appsv1.ReplicaSetSpec{Selector: sel}},
		&appsv1.ReplicaSet{ObjectMeta: meta("other-1", "rs-o", controlledBy("Deployment", "other", "d-other"), web), Spec: appsv1.ReplicaSetSpec{Selector: sel}},
		podOf("web-1-a", controlledBy("ReplicaSet", "web-1", "rs-1"), web),
		podOf("web-2-a", controlledBy("ReplicaSet", "web-2", "rs-2"), web),
		podOf("web-2-b", controlledBy("ReplicaSet", "web-2", "rs-2"), web),
		podOf("other-1-a", controlledBy("ReplicaSet", "other-1", "rs-o"), web),
		podOf("bare", nil, web),
		&appsv1.StatefulSet{ObjectMeta: meta("db", "s-db", nil, nil), Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}},
		podOf("db-0", controlledBy("StatefulSet", "db", "s-db"), map[string]string{"app": "db"}),
		podOf("db-x", nil, map[string]string{"app": "db"}),
		&batchv1.CronJob{ObjectMeta: meta("nightly", "cj", nil, nil)},
		&batchv1.Job{ObjectMeta: meta("nightly-1", "job-1", controlledBy("CronJob", "nightly", "cj"), nil)},
		&batchv1.Job{ObjectMeta: meta("once", "job-2", nil, nil)},
		podOf("nightly-1-a", controlledBy("Job", "nightly-1", "job-1"), map[string]string{"job": "1"}),
		podOf("once-a", controlledBy("Job", "once", "job-2"), map[string]string{"job": "2"}),
	}
	cl := &Cluster{client: fake.NewClientset(objects...), namespace: "apps"}
	for _, tt := range []struct {
		kind, name string
		want       []string
	}{
		{"Deployment", "web", []string{"web-1-a", "web-2-a", "web-2-b"}},
		{"ReplicaSet", "web-2", []string{"web-2-a", "web-2-b"}},
		{"StatefulSet", "db", []string{"db-0"}},
		{"CronJob", "nightly", []string{"nightly-1-a"}},
		{"Job", "once", []string{"once-a"}},
		{"Pod", "bare", nil},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			var got []string
			err := cl.WorkloadPods(t.Context(), tt.kind, tt.name, 2, func(p audit.Pod) error {
				if p.Namespace != "apps" || len(p.JSON) == 0 {
					t.Errorf("%s: namespace %q, %d bytes of JSON", p.Name, p.Namespace, len(p.JSON))
				}
				got = append(got, p.Name)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s/%s: Pods %v, want %v", tt.kind, tt.name, got, tt.want)
			}
		})
	}
	if err := cl.WorkloadPods(t.Context(), "Deployment", "absent", 2, func(audit.Pod) error { return nil }); err == nil {
		t.Error("a Deployment that is not there: no error")
	}
}

// The patch of a workload's explanation applies where its Pod template
// sits.
func TestTemplatePointer(t *testing.T) {
	for kind, want := range map[string]string{"Pod": "", "Deployment": "/spec/template", "StatefulSet": "/spec/template",
		"DaemonSet": "/spec/template", "ReplicaSet": "/spec/template", "Job": "/spec/template", "CronJob": "/spec/jobTemplate/spec/template"} {
		if got := TemplatePointer(kind); got != want {
			t.Errorf("TemplatePointer(%s) = %q, want %q", kind, got, want)
		}
	}
}
