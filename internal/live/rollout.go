package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/graftdev/graft/rollout"
)

// RolloutOptions bound how graft rollout --apply acts.
type RolloutOptions struct {
	// MaxConcurrent is how many owners are under way at once (at least 1).
	MaxConcurrent int
	// Timeout bounds each owner's rollout, from its restart to complete.
	Timeout time.Duration
	// Interval is how often an owner's progress is read.
	Interval time.Duration
	// Now is the clock (restartedAt values, progress).
	Now func() time.Time
	// DryRun sends every change as a server-side dry run (kubectl's
	// --dry-run=server): the API server validates and admits it, and
	// persists nothing. Nothing is waited for, and the items stay
	// planned, saying the API server accepted them.
	DryRun bool
}

// dryRun is the PatchOptions' DryRun of o.
func (o RolloutOptions) dryRun() []string {
	if o.DryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// Apply carries out plan, in its order, at most o.MaxConcurrent owners at
// a time, and records each item's outcome in it. Before each restart it
// reads the owner's PodDisruptionBudgets and skips the owner if one
// allows no disruption at that moment; it restarts as kubectl rollout
// restart does and waits for the rollout to complete as kubectl rollout
// status judges it. The first failure stops the run: owners not yet
// started stay not-started, those under way finish. Report items are
// left alone. It returns an error only when ctx ends.
func (cl *Cluster) Apply(ctx context.Context, plan *rollout.Plan, o RolloutOptions, prog *rollout.Progress) error {
	var acted []*rollout.Item
	for i := range plan.Items {
		it := &plan.Items[i]
		if it.Action == rollout.Report {
			it.State = rollout.Reported
			continue
		}
		acted = append(acted, it)
	}
	prog.Begin(len(acted))
	defer prog.End()
	var stopped atomic.Bool
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(o.MaxConcurrent, 1))
	for _, it := range acted {
		acquired := false
		select {
		case sem <- struct{}{}:
			acquired = true
		case <-ctx.Done():
		}
		if stopped.Load() || ctx.Err() != nil {
			if acquired {
				<-sem
			}
			it.State, it.Message = rollout.NotStarted, "the run stopped before it"
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			switch it.Action {
			case rollout.Restart:
				prog.Started(it, "restarting")
				cl.restart(ctx, it, o, prog)
			case rollout.InPlace:
				prog.Started(it, "upgrading in place")
				cl.upgradeInPlace(ctx, it, o, prog)
			}
			if it.State == rollout.Failed {
				stopped.Store(true)
			}
			prog.Finished(it)
		})
	}
	wg.Wait()
	return ctx.Err()
}

// restart restarts one owner unless a budget forbids it, and waits for
// its rollout.
func (cl *Cluster) restart(ctx context.Context, it *rollout.Item, o RolloutOptions, prog *rollout.Progress) {
	fail := func(format string, args ...any) {
		it.State, it.Message = rollout.Failed, fmt.Sprintf(format, args...)
	}
	own, err := getOwner(ctx, cl.client, it.Owner)
	if err != nil {
		fail("%v", err)
		return
	}
	if own.onDelete {
		fail("updateStrategy OnDelete: its Pods are replaced only when deleted")
		return
	}
	bs, err := budgets(ctx, cl.client, it.Namespace)
	if err != nil {
		fail("%v", err)
		return
	}
	if blocking := rollout.Blocking(bs, own.labels); len(blocking) > 0 {
		it.State, it.Message = rollout.SkippedBudget, rollout.BlockedMessage(blocking)
		return
	}
	if err := restartOwner(ctx, cl.client, it.Owner, o.Now(), o.dryRun()); err != nil {
		fail("%v", err)
		return
	}
	if o.DryRun {
		it.State, it.Message = rollout.Planned, "the API server accepts the restart (server dry run)"
		return
	}
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	last := ""
	for {
		own, err := getOwner(wctx, cl.client, it.Owner)
		switch {
		case err == nil && own.pending == "":
			prog.Ready(it, own.ready, own.want)
			it.State, it.Message = rollout.Done, fmt.Sprintf("rolled out: %d/%d Pods ready", own.ready, own.want)
			return
		case err == nil && own.failed:
			fail("%s", own.pending)
			return
		case err == nil:
			prog.Ready(it, own.ready, own.want)
			last = own.pending
		case !errors.Is(err, context.DeadlineExceeded) && wctx.Err() == nil:
			last = err.Error()
		}
		select {
		case <-wctx.Done():
			fail("not rolled out within %s: %s", o.Timeout, last)
			return
		case <-time.After(o.Interval):
		}
	}
}

// upgradeInPlace patches each Pod of the item, one at a time, and waits
// for it to be Ready again before the next: the kubelet restarts the
// sidecar whose image changed, and a Pod whose sidecar takes part in its
// readiness is never left unready alongside another.
func (cl *Cluster) upgradeInPlace(ctx context.Context, it *rollout.Item, o RolloutOptions, prog *rollout.Progress) {
	pods := cl.client.CoreV1().Pods(it.Namespace)
	for i, p := range it.Pods {
		prog.Ready(it, i, len(it.Pods))
		if p.Upgrade == nil {
			continue
		}
		patched, err := pods.Patch(ctx, p.Name, types.JSONPatchType, p.Upgrade.Patch, metav1.PatchOptions{FieldManager: "graft", DryRun: o.dryRun()})
		if err != nil {
			it.State, it.Message = rollout.Failed, fmt.Sprintf("pod %s: %v", p.Name, err)
			return
		}
		if o.DryRun {
			continue
		}
		if err := cl.waitPodReady(ctx, it.Namespace, p.Name, patched.Generation, o); err != nil {
			it.State, it.Message = rollout.Failed, fmt.Sprintf("pod %s: %v", p.Name, err)
			return
		}
	}
	prog.Ready(it, len(it.Pods), len(it.Pods))
	if o.DryRun {
		it.State, it.Message = rollout.Planned, fmt.Sprintf("the API server accepts the in-place upgrade of %d Pods (server dry run)", len(it.Pods))
		return
	}
	it.State, it.Message = rollout.Done, fmt.Sprintf("%d Pods upgraded in place", len(it.Pods))
}

// waitPodReady waits until Pod ns/name reports Ready for its generation
// gen (a Pod that was not running is not waited for). Right after the
// patch the Pod's status is still the old containers': a kubelet that
// reports status.observedGeneration (PodObservedGenerationTracking) is
// waited for until it has seen the patch; one that reports none is judged
// by its Ready condition alone.
func (cl *Cluster) waitPodReady(ctx context.Context, ns, name string, gen int64, o RolloutOptions) error {
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	for {
		p, err := cl.client.CoreV1().Pods(ns).Get(wctx, name, metav1.GetOptions{})
		seen := err == nil && (p.Status.ObservedGeneration == 0 || p.Status.ObservedGeneration >= gen)
		if err == nil && (p.Status.Phase != corev1.PodRunning || seen && podReady(p)) {
			return nil
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("not Ready within %s", o.Timeout)
		case <-time.After(o.Interval):
		}
	}
}

// podReady: the Pod's Ready condition is true.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
