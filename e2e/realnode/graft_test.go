package realnode

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/names"
)

// TestRealGraftRunsAsShipped: graft's image runs on a real node from
// deploy/base's Deployment as kustomize builds it, unchanged: every
// replica started, passed its startup and readiness probes, runs as uid
// 65532 on a read-only root filesystem; the controller manager lists the
// replicas in the Service's EndpointSlice, through which the API server
// reaches graft (a Pod created in an opted-in namespace comes back
// injected).
func TestRealGraftRunsAsShipped(t *testing.T) {
	c := need(t)
	want := c.Graft.Deployment
	live, err := c.Client.AppsV1().Deployments(want.Namespace).Get(t.Context(), want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What kustomize built, field by field, is what runs (the API
	// server only adds defaults).
	ws, ls := want.Spec.Template.Spec, live.Spec.Template.Spec
	wc, lc := ws.Containers[0], live.Spec.Template.Spec.Containers[0]
	for field, same := range map[string]bool{
		"image":                        wc.Image == lc.Image,
		"args":                         equality.Semantic.DeepEqual(wc.Args, lc.Args),
		"securityContext":              equality.Semantic.DeepEqual(wc.SecurityContext, lc.SecurityContext),
		"pod securityContext":          equality.Semantic.DeepDerivative(ws.SecurityContext, ls.SecurityContext),
		"startupProbe":                 sameProbe(wc.StartupProbe, lc.StartupProbe),
		"livenessProbe":                sameProbe(wc.LivenessProbe, lc.LivenessProbe),
		"readinessProbe":               sameProbe(wc.ReadinessProbe, lc.ReadinessProbe),
		"resources":                    equality.Semantic.DeepEqual(wc.Resources, lc.Resources),
		"volumeMounts":                 equality.Semantic.DeepEqual(wc.VolumeMounts, lc.VolumeMounts),
		"automountServiceAccountToken": equality.Semantic.DeepEqual(ws.AutomountServiceAccountToken, ls.AutomountServiceAccountToken),
	} {
		if !same {
			t.Errorf("the running Deployment's %s is not deploy/base's as built", field)
		}
	}
	pods, err := c.Client.CoreV1().Pods(want.Namespace).List(t.Context(), metav1.ListOptions{
		LabelSelector: metav1.FormatLabelSelector(want.Spec.Selector)})
	if err != nil {
		t.Fatal(err)
	}
	if int32(len(pods.Items)) != *want.Spec.Replicas {
		t.Fatalf("%d graft Pods, want the shipped %d replicas", len(pods.Items), *want.Spec.Replicas)
	}
	var ips []string
	for i := range pods.Items {
		p := &pods.Items[i]
		n, err := c.NodeFor(p)
		if err != nil {
			t.Fatal(err)
		}
		cs, ok := containerStatus(p, "graft")
		switch {
		case !ok:
			t.Fatalf("Pod %s has no graft container status", p.Name)
		case cs.State.Running == nil || cs.Started == nil || !*cs.Started || !cs.Ready:
			t.Errorf("Pod %s: graft not running, started and ready: %+v", p.Name, cs.State)
		case cs.RestartCount != 0:
			t.Errorf("Pod %s: graft restarted %d times", p.Name, cs.RestartCount)
		case cs.Image != c.Graft.Image:
			t.Errorf("Pod %s runs %s, want the shipped %s", p.Name, cs.Image, c.Graft.Image)
		}
		pid, err := n.ContainerPid(t.Context(), cs.ContainerID)
		if err != nil {
			t.Fatal(err)
		}
		if uid := procUID(t, pid); uid != "65532" {
			t.Errorf("Pod %s: graft runs as uid %s, want 65532", p.Name, uid)
		}
		if opts := rootMountOptions(t, pid); !slices.Contains(strings.Split(opts, ","), "ro") {
			t.Errorf("Pod %s: graft's root filesystem is mounted %s, want ro", p.Name, opts)
		}
		ips = append(ips, p.Status.PodIP)
	}
	slices.Sort(ips)

	// The endpoint slice controller's, not the harness's.
	slices_, err := c.Client.DiscoveryV1().EndpointSlices(want.Namespace).List(t.Context(), metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=graft"})
	if err != nil {
		t.Fatal(err)
	}
	var ready []string
	for _, s := range slices_.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				ready = append(ready, ep.Addresses...)
			}
		}
	}
	slices.Sort(ready)
	if fmt.Sprint(ready) != fmt.Sprint(ips) {
		t.Errorf("Service graft's ready endpoints %v, want its Pods' %v", ready, ips)
	}

	ns := profileNamespace(t, c, "real-shipped", "enabled")
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{appContainer()}},
	}
	got, err := c.Client.CoreV1().Pods(ns).Create(t.Context(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Annotations[names.Status]; !ok || len(nativeSidecars(got)) == 0 {
		t.Errorf("a Pod created in a namespace labelled %s=enabled came back without graft's sidecar", names.Inject)
	}
	t.Logf("graft %s: %d replicas on real nodes at %v, uid 65532, read-only root, reached through Service graft", c.Graft.Image, len(ips), ips)
}

// procUID is a process's real uid.
func procUID(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				return f[0]
			}
		}
	}
	t.Fatalf("/proc/%d/status: no Uid", pid)
	return ""
}

// rootMountOptions are the per-mount options of / as the process sees it.
func rootMountOptions(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	opts := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			opts = f[5] // the last mount on / is the one seen
		}
	}
	if opts == "" {
		t.Fatalf("/proc/%d/mountinfo: no mount on /", pid)
	}
	return opts
}

// sameProbe: got is want with the API server's defaults filled in (a
// field want leaves at zero may be anything).
func sameProbe(want, got *corev1.Probe) bool {
	if want == nil || got == nil {
		return want == got
	}
	if !equality.Semantic.DeepDerivative(want.ProbeHandler, got.ProbeHandler) {
		return false
	}
	for _, f := range [][2]int32{
		{want.InitialDelaySeconds, got.InitialDelaySeconds}, {want.TimeoutSeconds, got.TimeoutSeconds},
		{want.PeriodSeconds, got.PeriodSeconds}, {want.SuccessThreshold, got.SuccessThreshold},
		{want.FailureThreshold, got.FailureThreshold},
	} {
		if f[0] != 0 && f[0] != f[1] {
			return false
		}
	}
	return true
}
