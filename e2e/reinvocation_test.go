package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	regv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scenario 6: graft and a foreign mutator registered after it, both
// reinvocationPolicy: IfNeeded, the foreign one leaving graft's
// containers out but for imagePullPolicy, which graft does not compare.
// The stored Pod has exactly one of each thing graft injects, keeps every
// foreign edit, and the foreign container got graft's app-container edits
// (so graft was reinvoked).
func TestReinvocationWithForeignMutator(t *testing.T) {
	ns := optedIn(t, "e2e-reinvocation")
	foreign := &foreignMutator{}
	registerForeign(t, ns, foreign, regv1.IfNeededReinvocationPolicy)
	waitFor(t, "the foreign webhook to take effect", func(ctx context.Context) error {
		p, err := env.client.CoreV1().Pods(ns).Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if countContainers(p, foreignContainer) == 0 {
			return fmt.Errorf("no %s container yet", foreignContainer)
		}
		return nil
	})

	before := graftRequests(t)
	p := simplePod("reinvoked", "app", "worker")
	p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "registry.invalid/setup:1"}}
	createPod(t, ns, p)
	got := getPod(t, ns, "reinvoked")
	calls := graftRequests(t) - before

	// graft's injection, once, in every app container including the
	// foreign one.
	requireAgentInjected(t, got)
	if calls < 2 {
		t.Errorf("graft answered %g reviews for one create; want at least 2 (a reinvocation)", calls)
	}
	var problems []string
	if n := countContainers(got, foreignContainer); n != 1 {
		problems = append(problems, fmt.Sprintf("%d %s containers, want 1", n, foreignContainer))
	}
	if got.Annotations[foreignAnnotation] != "seen" {
		problems = append(problems, "foreign annotation lost")
	}
	// The foreign edits, once, on every container: the pull policy on
	// graft's too, the env var on the others.
	for _, c := range allContainers(got) {
		want := 1
		if strings.HasPrefix(c.Name, "graft-") {
			want = 0
		}
		if n := countEnv(c, foreignEnv); n != want {
			problems = append(problems, fmt.Sprintf("container %s has %d %s env vars, want %d", c.Name, n, foreignEnv, want))
		}
		if c.ImagePullPolicy != corev1.PullAlways {
			problems = append(problems, fmt.Sprintf("container %s has imagePullPolicy %q, want Always", c.Name, c.ImagePullPolicy))
		}
	}
	if len(problems) > 0 {
		t.Fatalf("stored Pod %s:\n  %s", containerNames(got), strings.Join(problems, "\n  "))
	}
	t.Logf("graft called %g times, foreign mutator %d times (including the probe) for containers %s",
		calls, foreign.calls.Load(), containerNames(got))
}

// Issue 32, case 7: a mutating webhook ordered after graft changes
// graft's sidecar. graft, reinvoked, finds it no longer what it renders
// and refuses the Pod, naming the container, the first field that differs
// and the template; no Pod is stored with the changed sidecar.
func TestReinvocationRefusesAnEditedSidecar(t *testing.T) {
	for _, c := range []struct {
		name, field string
		edit        func(base string, c corev1.Container) []patchOp
	}{
		{"command and root", "command", func(base string, c corev1.Container) []patchOp {
			if len(c.Command) > 0 {
				return nil
			}
			root := int64(0)
			return []patchOp{
				{"add", base + "/command", []string{"/bin/sh", "-c", "exec evil"}},
				{"add", base + "/securityContext", corev1.SecurityContext{RunAsUser: &root,
					Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}},
			}
		}},
		{"an env var", "env[2]", func(base string, c corev1.Container) []patchOp {
			if countEnv(c, foreignEnv) > 0 {
				return nil
			}
			return []patchOp{{"add", base + "/env/-", corev1.EnvVar{Name: foreignEnv, Value: "1"}}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := optedIn(t, "e2e-reinvocation-edit-"+strings.ReplaceAll(c.name, " ", "-"))
			registerForeign(t, ns, &foreignMutator{patch: editGraftSidecars(c.edit)}, regv1.IfNeededReinvocationPolicy)
			want := `Pod already has init container "` + agentContainer + `", which graft did not inject: its ` + c.field + ` differs from template agent's`
			waitFor(t, "the editing webhook to take effect", func(ctx context.Context) error {
				_, err := env.client.CoreV1().Pods(ns).Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if err == nil || !strings.Contains(err.Error(), want) {
					return fmt.Errorf("not refused by graft yet: %v", err)
				}
				return nil
			})
			created, err := env.client.CoreV1().Pods(ns).Create(t.Context(), simplePod("edited"), metav1.CreateOptions{})
			if err == nil {
				t.Fatalf("stored with graft's sidecar edited: %v", created.Spec.InitContainers)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("refused, but not by graft saying %q: %v", want, err)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// waitFor polls check every 200ms for up to a minute.
func waitFor(t *testing.T, what string, check func(context.Context) error) {
	t.Helper()
	waitWithin(t, what, time.Minute, check)
}

// waitWithin is waitFor with a limit of d.
func waitWithin(t *testing.T, what string, d time.Duration, check func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var last error
	for {
		if last = check(ctx); last == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last: %v)", what, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
