package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	regv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/proc"
)

// watchdogOutage is how long graft is down in TestWatchdog, and
// watchdogCreateEvery how often a Deployment is created meanwhile.
const (
	watchdogOutage      = 12 * time.Second
	watchdogCreateEvery = time.Second
	// watchdogConverge is how soon after graft is back every Pod made
	// without it must have been replaced by an injected one.
	watchdogConverge = 60 * time.Second
)

// startWatchdog runs graft watchdog against the suite's cluster with the
// suite's configuration, as the ServiceAccount and RBAC
// deploy/components/watchdog ships (watchdogKubeconfig), its Lease in the
// namespace lease, made for it; args override its flags. It returns its
// metrics address. The test's cleanup stops it.
func startWatchdog(t *testing.T, lease string, args ...string) string {
	t.Helper()
	lease = newNamespace(t, lease, nil)
	kubeconfig := watchdogKubeconfig(t, lease)
	addrs, err := proc.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	metrics := addrs[0].String()
	logPath := filepath.Join(t.TempDir(), "watchdog.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(graftBin(t), "watchdog", "--kubeconfig", kubeconfig, "--config", env.cluster.GraftConfigPath(),
		"--lease-namespace", lease, "--identity", "e2e", "--metrics-addr", metrics,
		"--grace", "5s", "--retry", "2s", "--max-restarts-per-minute", "120")
	cmd.Args = append(cmd.Args, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("graft watchdog's log:\n%s", tail(string(b), 8<<10))
			}
		}
	})
	waitFor(t, "graft watchdog to lead", func(ctx context.Context) error {
		v, err := watchdogMetric(ctx, metrics, "graft_watchdog_leader")
		if err == nil && v != 1 {
			err = fmt.Errorf("graft_watchdog_leader %v", v)
		}
		return err
	})
	return metrics
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// watchdogMetric reads one series (name with its labels, as the text
// format writes it) from the watchdog's /metrics.
func watchdogMetric(ctx context.Context, addr, series string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no series %s", series)
}

// outage stops graft, runs stopped (if any), creates a Deployment of one
// replica in ns every watchdogCreateEvery for watchdogOutage, starts
// graft again and returns the names of the Deployments and when graft was
// back.
func outage(t *testing.T, ns, prefix string, stopped func()) ([]string, time.Time) {
	t.Helper()
	if err := env.cluster.StopGraft(); err != nil {
		t.Fatal(err)
	}
	if stopped != nil {
		stopped()
	}
	t.Cleanup(func() {
		if !env.cluster.GraftRunning() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := env.cluster.StartGraft(ctx); err != nil {
				t.Errorf("restart graft: %v", err)
			}
		}
	})
	var made []string
	end := time.Now().Add(watchdogOutage)
	for i := 0; time.Now().Before(end); i++ {
		name := fmt.Sprintf("%s-%02d", prefix, i)
		createDeployments(t, ns, newDeployment(name, 1))
		made = append(made, name)
		time.Sleep(watchdogCreateEvery)
	}
	if err := env.cluster.StartGraft(t.Context()); err != nil {
		t.Fatal(err)
	}
	return made, time.Now()
}

// podsInjected counts the Pods of ns (not being deleted): injected and
// Ready, and not injected.
func podsInjected(ctx context.Context, ns string) (ready, without int, err error) {
	l, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	for i := range l.Items {
		p := &l.Items[i]
		switch {
		case p.DeletionTimestamp != nil:
		case !isInjected(p):
			without++
		case podIsReady(p):
			ready++
		}
	}
	return ready, without, nil
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestWatchdog: graft down for 12 s under steady Deployment creates, with
// the shipped failurePolicy Ignore and no guarantee policy: their Pods
// are admitted without graft. graft watchdog (grace 5 s) restarts each
// Deployment once graft answers again, and within 60 s of graft's return
// every Pod is an injected one, Ready. With the guarantee policy on, the
// same outage leaves the watchdog nothing to do: no Pod without graft is
// ever stored, and it restarts nothing.
func TestWatchdog(t *testing.T) {
	needsWorkloads(t)
	if fp := env.webhook.Webhooks[0].FailurePolicy; fp == nil || *fp != regv1.Ignore {
		t.Fatalf("the shipped webhook's failurePolicy is %v; this test is about Ignore", fp)
	}
	ns := newNamespace(t, "e2e-watchdog", map[string]string{names.Inject: names.EnabledValue, names.Watchdog: names.EnabledValue})
	if err := env.waitInjecting(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	metrics := startWatchdog(t, "e2e-watchdog-lease")

	made, back := outage(t, ns, "steady", nil)
	_, without, err := podsInjected(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	if without == 0 {
		t.Fatal("no Pod was admitted without graft during the outage")
	}
	var converged time.Duration
	waitWithin(t, "every Pod to be an injected one", watchdogConverge, func(ctx context.Context) error {
		ready, left, err := podsInjected(ctx, ns)
		if err != nil {
			return err
		}
		if left > 0 || ready < len(made) {
			return fmt.Errorf("%d Pods without graft, %d injected and Ready of %d", left, ready, len(made))
		}
		converged = time.Since(back)
		return nil
	})
	restarts, err := watchdogMetric(t.Context(), metrics, `graft_watchdog_restarts_total{kind="Deployment"}`)
	if err != nil {
		t.Fatal(err)
	}
	if int(restarts) < without || int(restarts) > len(made) {
		t.Errorf("%v Deployments restarted; %d Pods were admitted without graft, of %d Deployments", restarts, without, len(made))
	}
	events, err := env.client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=GraftRestarted"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) < without {
		t.Errorf("%d GraftRestarted Events, want one per restarted Deployment (%d)", len(events.Items), without)
	}
	t.Logf("graft down %s, %d Deployments created meanwhile, %d Pods admitted without graft; graft watchdog restarted %v Deployments "+
		"and every Pod was an injected one %s after graft returned", watchdogOutage, len(made), without, restarts, converged.Round(100*time.Millisecond))

	// The guarantee on: nothing without graft is stored, nothing to do.
	policy, binding := env.shipped.Policy.DeepCopy(), env.shipped.Binding.DeepCopy()
	policy.ResourceVersion, binding.ResourceVersion = "", ""
	installPolicy(t, policy, binding)
	guarded := newNamespace(t, "e2e-watchdog-guarded", map[string]string{names.Inject: names.EnabledValue, names.Watchdog: names.EnabledValue})
	if err := env.waitInjecting(t.Context(), guarded); err != nil {
		t.Fatal(err)
	}
	made, _ = outage(t, guarded, "guarded", func() {
		waitFor(t, "the guarantee policy to refuse Pods while graft is down", func(ctx context.Context) error {
			_, err := env.client.CoreV1().Pods(guarded).Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil {
				return fmt.Errorf("a Pod was admitted without graft")
			}
			return nil
		})
	})
	time.Sleep(10 * time.Second) // the watchdog's grace and a retry
	_, without, err = podsInjected(t.Context(), guarded)
	if err != nil {
		t.Fatal(err)
	}
	after, err := watchdogMetric(t.Context(), metrics, `graft_watchdog_restarts_total{kind="Deployment"}`)
	if err != nil {
		t.Fatal(err)
	}
	if without != 0 || after != restarts {
		t.Errorf("with the guarantee policy on: %d Pods without graft stored, %v restarts (%v before)", without, after, restarts)
	}
	t.Logf("with the guarantee policy on: %d Deployments created during the outage, 0 Pods without graft stored, 0 restarts", len(made))
}
