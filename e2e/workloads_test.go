package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/graftdev/graft/e2e/internal/cluster"
)

// What the workload tests share: objects written as users write them,
// run by the real controllers, scheduler and kwok's nodes.

// rolloutTimeout bounds a wait for controllers: they run at the client
// rates kubeadm leaves them (20 requests/s each), on a shared machine.
const rolloutTimeout = 3 * time.Minute

// podTemplate is simplePod's spec as a workload's template, labelled
// app=<app>.
func podTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       simplePod("").Spec,
	}
}

// newDeployment is a Deployment of replicas Pods of podTemplate(name).
func newDeployment(name string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name),
		},
	}
}

// createDeployments creates each Deployment in ns.
func createDeployments(t *testing.T, ns string, ds ...*appsv1.Deployment) {
	t.Helper()
	for _, d := range ds {
		if _, err := env.client.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Deployment %s/%s: %v", ns, d.Name, err)
		}
	}
}

// waitRolledOut waits until every Deployment of ns has rolled out.
func waitRolledOut(t *testing.T, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), rolloutTimeout)
	defer cancel()
	list, err := env.client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range list.Items {
		if _, err := env.cluster.WaitRolledOut(ctx, ns, d.Name); err != nil {
			t.Fatalf("%v (FailedCreate events: %v)", err, failedCreates(t, ns))
		}
	}
}

// restartDeployments rolls Deployments ns/names as `kubectl rollout
// restart` does: a new annotation on the Pod template, so a new
// ReplicaSet replaces the old.
func restartDeployments(t *testing.T, ns string, names ...string) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`,
		time.Now().Format(time.RFC3339Nano))
	for _, name := range names {
		if _, err := env.client.AppsV1().Deployments(ns).Patch(t.Context(), name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("restart Deployment %s/%s: %v", ns, name, err)
		}
	}
}

// failedCreates is what the controllers reported, as Events, of the Pods
// they could not create in ns: the user's view of a refused create.
func failedCreates(t *testing.T, ns string) []string {
	t.Helper()
	return failedCreatesIn(t, env.client, ns)
}

// failedCreatesIn is failedCreates through client, for a test's own
// cluster.
func failedCreatesIn(t *testing.T, client kubernetes.Interface, ns string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, fmt.Sprintf("%s/%s (x%d): %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, max(e.Count, 1), e.Message))
	}
	return out
}

// podsByController lists the Pods of ns that are not being deleted,
// grouped by the uid of the controller that owns them.
func podsByController(t *testing.T, ns string) map[types.UID][]corev1.Pod {
	t.Helper()
	list, err := env.client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[types.UID][]corev1.Pod{}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if ref := metav1.GetControllerOf(&p); ref != nil {
			out[ref.UID] = append(out[ref.UID], p)
		}
	}
	return out
}

// TestWorkloadKinds: in an opted-in namespace, each kind of workload users
// run gets its Pods from its controller through graft, every one injected
// and scheduled, Ready (a Job's: Succeeded): a Deployment, a StatefulSet
// with its headless Service, a DaemonSet (a Pod on every node), a Job and
// a CronJob's first Job. A PodDisruptionBudget holds an eviction of the
// Deployment's Pods until the Deployment has a Pod to spare, and the Pod
// that replaces the evicted one is injected too.
func TestWorkloadKinds(t *testing.T) {
	needsWorkloads(t)
	ns := optedIn(t, "e2e-workloads")
	if err := env.waitInjecting(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	never := func(app string) corev1.PodTemplateSpec {
		tpl := podTemplate(app)
		tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		return tpl
	}
	// The CronJob first: its first Job starts on the next minute.
	cron := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tick"},
		Spec: batchv1.CronJobSpec{Schedule: "* * * * *", JobTemplate: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{Template: never("tick")},
		}},
	}
	if _, err := env.client.BatchV1().CronJobs(ns).Create(ctx, cron, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createDeployments(t, ns, newDeployment("web", 3))
	two := int32(2)
	db := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &two, ServiceName: "db",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: podTemplate("db"),
		},
	}
	dbSvc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "db"},
			Ports: []corev1.ServicePort{{Name: "db", Port: 5432}}},
	}
	agent := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: podTemplate("agent"),
		},
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "batch"},
		Spec:       batchv1.JobSpec{Completions: &two, Parallelism: &two, Template: never("batch")},
	}
	three := intstr.FromInt32(3)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &three,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	for what, create := range map[string]func() error{
		"Service db": func() error {
			_, err := env.client.CoreV1().Services(ns).Create(ctx, dbSvc, metav1.CreateOptions{})
			return err
		},
		"StatefulSet db": func() error {
			_, err := env.client.AppsV1().StatefulSets(ns).Create(ctx, db, metav1.CreateOptions{})
			return err
		},
		"DaemonSet agent": func() error {
			_, err := env.client.AppsV1().DaemonSets(ns).Create(ctx, agent, metav1.CreateOptions{})
			return err
		},
		"Job batch": func() error {
			_, err := env.client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
			return err
		},
		"PodDisruptionBudget web": func() error {
			_, err := env.client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); err != nil {
			t.Fatalf("create %s: %v", what, err)
		}
	}

	waitRolledOut(t, ns)
	nodes := env.nodes
	waitWithin(t, "the StatefulSet, the DaemonSet, the Job and the CronJob", 2*time.Minute, func(ctx context.Context) error {
		sts, err := env.client.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sts.Status.ReadyReplicas != two {
			return fmt.Errorf("StatefulSet db: %d of %d Ready", sts.Status.ReadyReplicas, two)
		}
		ds, err := env.client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ds.Status.DesiredNumberScheduled != int32(nodes) || ds.Status.NumberReady != int32(nodes) {
			return fmt.Errorf("DaemonSet agent: %d of %d Ready, want one on each of %d nodes", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled, nodes)
		}
		jobs, err := env.client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		done := map[string]bool{}
		for _, j := range jobs.Items {
			owner := j.Name
			if ref := metav1.GetControllerOf(&j); ref != nil && ref.Kind == "CronJob" {
				owner = "CronJob " + ref.Name
			}
			done[owner] = done[owner] || (j.Status.Succeeded == ptrValue(j.Spec.Completions, 1))
		}
		if !done["batch"] || !done["CronJob tick"] {
			return fmt.Errorf("Jobs complete: %v", done)
		}
		return nil
	})

	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		if ref == nil {
			t.Errorf("Pod %s has no controller", p.Name)
			continue
		}
		kinds[ref.Kind]++
		switch {
		case !isInjected(&p):
			t.Errorf("%s Pod %s was not injected: %s", ref.Kind, p.Name, containerNames(&p))
		case p.Spec.NodeName == "":
			t.Errorf("%s Pod %s was never scheduled", ref.Kind, p.Name)
		case ref.Kind == "Job" && p.Status.Phase != corev1.PodSucceeded:
			t.Errorf("Job Pod %s is %s, want Succeeded", p.Name, p.Status.Phase)
		case ref.Kind != "Job" && !cluster.PodReady(&p):
			t.Errorf("%s Pod %s is not Ready", ref.Kind, p.Name)
		}
	}
	t.Logf("Pods by controller kind, every one injected: %v", kinds)
	if f := failedCreates(t, ns); len(f) > 0 {
		t.Errorf("failed creates:\n%s", strings.Join(f, "\n"))
	}

	// The budget: 3 Pods, 3 must stay, so none may be evicted; with a
	// fourth, one may.
	web, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	victim := web.Items[0].Name
	waitFor(t, "the budget to count the Deployment's Pods", func(ctx context.Context) error {
		got, err := env.client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.ObservedGeneration < got.Generation || got.Status.CurrentHealthy != 3 {
			return fmt.Errorf("budget status %+v", got.Status)
		}
		return nil
	})
	err = env.client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim, Namespace: ns}})
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting %s with no disruption allowed: %v, want 429 Too Many Requests", victim, err)
	}
	scale := []byte(`{"spec":{"replicas":4}}`)
	if _, err := env.client.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, scale, metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the eviction the budget allows with a fourth Pod", func(ctx context.Context) error {
		return env.client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim, Namespace: ns}})
	})
	waitRolledOut(t, ns)
	after, err := env.cluster.WaitPodsReady(ctx, ns, "app=web", 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range after {
		if p.Name == victim {
			t.Errorf("evicted Pod %s is still there", victim)
		}
		if !isInjected(&p) {
			t.Errorf("Pod %s, after the eviction, was not injected", p.Name)
		}
	}
}

// ptrValue is *p, or def when p is nil.
func ptrValue[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
