package realnode

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/graftdev/graft/e2e/internal/realcluster"
	"github.com/graftdev/graft/internal/names"
)

// podReady is how long a Pod on a real node may take from create to
// Ready here: images are local, and a loaded 2-core machine starts a
// Pod in seconds; the margin is for the machine, not the measure (make
// bench-node measures).
const podReady = 3 * time.Minute

// profileNamespace creates a namespace opted in to profile (the default
// profile for "enabled"), enforcing the restricted Pod Security Standard,
// deleted when the test ends so its Pods leave the node.
func profileNamespace(t *testing.T, c *realcluster.Cluster, name, profile string) string {
	t.Helper()
	labels := map[string]string{}
	if profile != "" {
		labels[names.Inject] = profile
	}
	if err := c.CreateNamespace(t.Context(), name, labels); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("namespace %s:\n%s", name, c.PodsReport(context.Background(), name))
		}
		_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if profile != "" {
		// Its probe Pod is not restricted: enforce once graft injects.
		if err := c.WaitInjecting(t.Context(), name); err != nil {
			t.Fatalf("namespace %s: graft does not inject yet: %v", name, err)
		}
	}
	patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`)
	if _, err := c.Client.CoreV1().Namespaces().Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// appContainer is the tests' application container: restricted, ready
// on /healthz, started with args.
func appContainer(args ...string) corev1.Container {
	return corev1.Container{
		Name:  "app",
		Image: realcluster.AppImage,
		Args:  args,
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
		}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
			PeriodSeconds: 1,
		},
		SecurityContext: restricted(),
	}
}

func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](1000),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// deployment is a Deployment of one replica of the app container.
func deployment(name string, app corev1.Container) *appsv1.Deployment {
	labels := map[string]string{"app": name, "app.kubernetes.io/name": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{app},
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					// Only a real node runs the Pod, beside kwok's should
					// there be any.
					NodeSelector: map[string]string{"type": "real"},
				},
			},
		},
	}
}

// waitAvailable waits for the Deployment's replicas to be available and
// returns its Pods (of its current ReplicaSet, not terminating).
func waitAvailable(t *testing.T, c *realcluster.Cluster, ns, name string) []corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), podReady)
	defer cancel()
	var pods []corev1.Pod
	err := poll(ctx, 250*time.Millisecond, func(ctx context.Context) error {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := *d.Spec.Replicas
		if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas < want || d.Status.AvailableReplicas < want || d.Status.Replicas != want {
			return fmt.Errorf("deployment %s: %d of %d updated replicas available", name, d.Status.AvailableReplicas, want)
		}
		list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return err
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				pods = append(pods, p)
			}
		}
		if int32(len(pods)) != want {
			return fmt.Errorf("deployment %s: %d Pods, want %d", name, len(pods), want)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, c.PodsReport(context.Background(), ns))
	}
	return pods
}

// logs reads a container's log through the API server, which reads it
// from the kubelet on the node's address.
func logs(t *testing.T, c *realcluster.Cluster, p *corev1.Pod, container string) string {
	t.Helper()
	rc, err := c.Client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container}).Stream(t.Context())
	if err != nil {
		t.Fatalf("logs of %s/%s %s: %v", p.Namespace, p.Name, container, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// logTime finds the first line of log matching re (whose first group is an
// RFC 3339 time) and returns that time.
func logTime(log string, re *regexp.Regexp) (time.Time, bool) {
	m := re.FindStringSubmatch(log)
	if m == nil {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, m[1])
	return at, err == nil
}

var appStarted = regexp.MustCompile(`app started at (\S+)`)

// containerStatus is the status of the container named name, init or not.
func containerStatus(p *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if cs.Name == name {
			return cs, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// nativeSidecars are the Pod's init containers with restartPolicy Always.
func nativeSidecars(p *corev1.Pod) []corev1.Container {
	var out []corev1.Container
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return out
}

func poll(ctx context.Context, interval time.Duration, check func(context.Context) error) error {
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(interval):
		}
	}
}

// dnsName makes a profile's name usable in a namespace name.
func dnsName(s string) string { return strings.ReplaceAll(s, "_", "-") }
