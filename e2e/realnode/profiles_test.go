package realnode

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/e2e/internal/realcluster"
	"github.com/graftdev/graft/internal/names"
)

// shippedProfiles are the profiles deploy/base/config.yaml ships, sorted,
// and the templates each injects.
func shippedProfiles(t *testing.T, c *realcluster.Cluster) ([]string, map[string][]string) {
	t.Helper()
	var cfg struct {
		Profiles map[string]struct {
			Templates []string `json:"templates"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(c.Graft.Config, &cfg); err != nil {
		t.Fatal(err)
	}
	var out []string
	tpls := map[string][]string{}
	for p, prof := range cfg.Profiles {
		out = append(out, p)
		tpls[p] = prof.Templates
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatal("deploy/base/config.yaml ships no profile")
	}
	return out, tpls
}

// startupCheck is what an app container may rely on when it starts, by
// a native sidecar's startup probe: the kubelet starts the app only once
// the probe passed.
type startupCheck struct {
	sidecar string
	// arg is the app's flag that checks it at start.
	arg string
	// passed finds in the sidecar's log when it first passed.
	passed *regexp.Regexp
}

var testFile = regexp.MustCompile(`test -f (\S+)`)

// startupChecks derives them from the injected Pod's native sidecars.
func startupChecks(t *testing.T, p *corev1.Pod) []startupCheck {
	t.Helper()
	var out []startupCheck
	for _, s := range nativeSidecars(p) {
		pr := s.StartupProbe
		switch {
		case pr == nil:
		case pr.HTTPGet != nil:
			port := pr.HTTPGet.Port.IntValue()
			if port == 0 {
				for _, cp := range s.Ports {
					if cp.Name == pr.HTTPGet.Port.StrVal {
						port = int(cp.ContainerPort)
					}
				}
			}
			out = append(out, startupCheck{
				sidecar: s.Name,
				arg:     fmt.Sprintf("--require-http=http://127.0.0.1:%d%s", port, pr.HTTPGet.Path),
				passed:  regexp.MustCompile(`GET ` + regexp.QuoteMeta(pr.HTTPGet.Path) + ` answered 200 first at (\S+)`),
			})
		case pr.Exec != nil:
			m := testFile.FindAllStringSubmatch(strings.Join(pr.Exec.Command, " "), -1)
			if len(m) == 0 {
				t.Fatalf("sidecar %s: startup probe %q: no file it waits for", s.Name, pr.Exec.Command)
			}
			for _, f := range m {
				out = append(out, startupCheck{
					sidecar: s.Name,
					arg:     "--require-file=" + f[1],
					passed:  regexp.MustCompile(`rendered ` + regexp.QuoteMeta(f[1]) + ` at (\S+)`),
				})
			}
		default:
			t.Fatalf("sidecar %s: a startup probe this test cannot follow: %+v", s.Name, pr)
		}
	}
	return out
}

// injectedPod is what graft makes of the app's Pod in ns (a dry run).
func injectedPod(t *testing.T, c *realcluster.Cluster, ns string, app corev1.Container) *corev1.Pod {
	t.Helper()
	d := deployment("probe", app)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Labels: d.Spec.Template.Labels}, Spec: d.Spec.Template.Spec}
	got, err := c.Client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Annotations[names.Status]; !ok {
		t.Fatalf("namespace %s: a Pod comes back without %s", ns, names.Status)
	}
	return got
}

// TestRealProfilesRun: for every profile deploy/base ships, a Deployment
// created through graft reaches Ready on a real node with its sidecars
// running; each native sidecar started before the app container, and
// where the template gives it a startup probe, the probe passed before the
// app started: the app found the probe's endpoint answering, or its file
// rendered, at its first instant, and the sidecar's own log dates the
// probe's first success before the app's start.
func TestRealProfilesRun(t *testing.T) {
	c := need(t)
	defaults, err := realcluster.TemplateImages()
	if err != nil {
		t.Fatal(err)
	}
	profiles, templatesOf := shippedProfiles(t, c)
	for _, profile := range profiles {
		t.Run(profile, func(t *testing.T) {
			// Every profile runs: each template it injects is built in and
			// its default image is one the nodes have.
			for _, tpl := range templatesOf[profile] {
				image, ok := defaults[tpl]
				if !ok {
					t.Fatalf("template %s is not built in", tpl)
				}
				if _, ok := c.Images[image]; !ok {
					t.Fatalf("template %s runs %s, which the harness builds no image for", tpl, image)
				}
			}
			ns := profileNamespace(t, c, "real-p-"+dnsName(profile), profile)
			checks := startupChecks(t, injectedPod(t, c, ns, appContainer()))
			var args []string
			for _, ch := range checks {
				args = append(args, ch.arg)
			}
			if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), deployment("app", appContainer(args...)), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			pods := waitAvailable(t, c, ns, "app")
			p := &pods[0]
			if _, err := c.NodeFor(p); err != nil {
				t.Fatal(err)
			}
			app, _ := containerStatus(p, "app")
			if app.State.Running == nil || app.RestartCount != 0 {
				t.Fatalf("app container: %+v, restarts %d", app.State, app.RestartCount)
			}
			sidecars := nativeSidecars(p)
			if len(sidecars) == 0 {
				t.Fatal("no native sidecar injected")
			}
			var names []string
			for _, s := range sidecars {
				cs, ok := containerStatus(p, s.Name)
				switch {
				case !ok || cs.State.Running == nil:
					t.Errorf("sidecar %s is not running: %+v", s.Name, cs.State)
					continue
				case cs.Started == nil || !*cs.Started || !cs.Ready:
					t.Errorf("sidecar %s: started %v, ready %v", s.Name, cs.Started, cs.Ready)
				case cs.RestartCount != 0:
					t.Errorf("sidecar %s restarted %d times", s.Name, cs.RestartCount)
				}
				// The status dates to the second: no later than the app.
				if cs.State.Running.StartedAt.After(app.State.Running.StartedAt.Time) {
					t.Errorf("sidecar %s started at %v, after the app (%v)", s.Name, cs.State.Running.StartedAt, app.State.Running.StartedAt)
				}
				names = append(names, s.Name)
			}
			for _, ic := range p.Status.InitContainerStatuses {
				if slices.Contains(names, ic.Name) {
					continue
				}
				if ic.State.Terminated == nil || ic.State.Terminated.ExitCode != 0 {
					t.Errorf("init container %s did not complete: %+v", ic.Name, ic.State)
				}
			}
			appLog := logs(t, c, p, "app")
			started, ok := logTime(appLog, appStarted)
			if !ok {
				t.Fatalf("the app's log says nothing of its start:\n%s", appLog)
			}
			for _, ch := range checks {
				log := logs(t, c, p, ch.sidecar)
				passed, ok := logTime(log, ch.passed)
				if !ok {
					t.Errorf("sidecar %s's log does not show its startup probe passing (%s):\n%s", ch.sidecar, ch.passed, log)
					continue
				}
				if !passed.Before(started) {
					t.Errorf("sidecar %s's startup probe first passed at %s, not before the app started (%s)", ch.sidecar, passed.Format(time.RFC3339Nano), started.Format(time.RFC3339Nano))
				}
				t.Logf("%s: startup probe passed %s before the app started (%s)", ch.sidecar, started.Sub(passed).Round(time.Millisecond), ch.arg)
			}
		})
	}
}

// TestRealJobWithNativeSidecarCompletes: a Job's Pod, injected with the
// otel-agent profile's native sidecar, completes once its app container
// exits 0: the kubelet stops the sidecar, and the Job is Complete.
func TestRealJobWithNativeSidecarCompletes(t *testing.T) {
	c := need(t)
	ns := profileNamespace(t, c, "real-job", "otel-agent")
	app := appContainer("--exit-after=2s")
	app.ReadinessProbe, app.Ports = nil, nil
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "work"},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers:    []corev1.Container{app},
				RestartPolicy: corev1.RestartPolicyNever,
				NodeSelector:  map[string]string{"type": "real"},
			}},
		},
	}
	if _, err := c.Client.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), podReady)
	defer cancel()
	err := poll(ctx, 500*time.Millisecond, func(ctx context.Context) error {
		j, err := c.Client.BatchV1().Jobs(ns).Get(ctx, "work", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if done, failed := jobState(j); failed != "" {
			return fmt.Errorf("job failed: %s", failed)
		} else if !done {
			return errors.New("job not complete")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, c.PodsReport(context.Background(), ns))
	}
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=work"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the Job's Pods: %v (%d)", err, len(pods.Items))
	}
	p := &pods.Items[0]
	if p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("the Job's Pod is %s, want Succeeded", p.Status.Phase)
	}
	for _, s := range nativeSidecars(p) {
		cs, _ := containerStatus(p, s.Name)
		if cs.State.Terminated == nil {
			t.Errorf("sidecar %s was not stopped: %+v", s.Name, cs.State)
		}
	}
	if len(nativeSidecars(p)) == 0 {
		t.Error("the Job's Pod has no native sidecar")
	}
}

// jobState: complete, or why it failed.
func jobState(j *batchv1.Job) (bool, string) {
	for _, cond := range j.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			return true, ""
		case batchv1.JobFailed:
			return false, cond.Reason + ": " + cond.Message
		}
	}
	return false, ""
}
