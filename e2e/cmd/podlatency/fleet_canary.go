package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/proc"
)

// canaryRevision is the revision deploy/examples/revisions' canary tag
// sends 10% of the workloads to.
const (
	canaryRevision = "2026-12"
	canaryTag      = "canary"
	canaryPercent  = 10
	canaryPoints   = 5 // the share must fall within canaryPercent ± this
	canaryReplicas = 2
)

// canaryResult is the canary on real rollouts: Deployments rolled out by
// the controllers in a namespace on the tag canary, each ReplicaSet's
// Pods given one revision by graft.
type canaryResult struct {
	Deployments int `json:"deployments"`
	ReplicaSets int `json:"replicasets"`
	OnCanary    int `json:"on_canary"`
	// Mixed counts ReplicaSets whose Pods got different revisions.
	Mixed         int     `json:"mixed"`
	SharePercent  float64 `json:"share_percent"`
	Pods          int     `json:"pods"`
	FailedCreates int     `json:"failed_creates"`
	Uninjected    int     `json:"uninjected"`
	RolledOutS    float64 `json:"rolled_out_s"`
}

// fleetCanary serves graft with deploy/examples/revisions (its
// configuration and webhooks), two replicas behind its Service, and rolls
// out -canary-deployments Deployments in a namespace on the canary tag.
func fleetCanary(ctx context.Context, o options, stderr io.Writer) (res canaryResult, err error) {
	b, done, err := fleetBench(ctx, o, "canary", stderr)
	if err != nil {
		return res, err
	}
	defer done(&err)
	c := b.c
	v, served, err := setupServed(ctx, b, filepath.Join("..", "deploy", "examples", "revisions"),
		map[string]string{names.Inject: "enabled", names.Revision: canaryTag})
	if served != nil {
		b.onClose(func() { _ = served.Close() })
	}
	if err != nil {
		return res, err
	}
	client, err := quietClient(c)
	if err != nil {
		return res, err
	}
	pod := fleetPod()
	if err := waitInjecting(ctx, client, v, pod); err != nil {
		return res, err
	}
	before, err := b.fleetSnapshot(ctx, served.Replicas)
	if err != nil {
		return res, err
	}
	start := time.Now()
	if _, err := createFleet(ctx, client, v.ns, pod, o.canaryDeployments, canaryReplicas); err != nil {
		return res, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, o.fleetTimeout)
	defer cancel()
	if err := waitAllRolledOut(waitCtx, client, v.ns); err != nil {
		return res, err
	}
	res.RolledOutS = time.Since(start).Seconds()
	after, err := b.fleetSnapshot(ctx, served.Replicas)
	if err != nil {
		return res, err
	}
	res.Deployments = o.canaryDeployments
	res.FailedCreates = int(after.failed - before.failed)
	bySet, err := revisionsBySet(ctx, client, v.ns, &res)
	if err != nil {
		return res, err
	}
	res.ReplicaSets = len(bySet)
	for _, revs := range bySet {
		if revs[canaryRevision] > 0 && len(revs) > 1 {
			res.Mixed++
		}
		if revs[canaryRevision] > 0 {
			res.OnCanary++
		}
	}
	if res.ReplicaSets > 0 {
		res.SharePercent = 100 * float64(res.OnCanary) / float64(res.ReplicaSets)
	}
	fmt.Fprintf(stderr, "fleet: canary: %d of %d ReplicaSets (%.0f%%) on %s, %d mixed, %d Pods, %d failed creates, rolled out in %.1f s\n",
		res.OnCanary, res.ReplicaSets, res.SharePercent, canaryRevision, res.Mixed, res.Pods, res.FailedCreates, res.RolledOutS)
	return res, nil
}

// waitAllRolledOut waits until every Deployment of ns has rolled out.
func waitAllRolledOut(ctx context.Context, client kubernetes.Interface, ns string) error {
	return proc.Poll(ctx, nil, time.Second, func(ctx context.Context) error {
		list, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		pending := 0
		for i := range list.Items {
			if cluster.RolloutPending(&list.Items[i]) != nil {
				pending++
			}
		}
		if pending > 0 {
			return fmt.Errorf("%d of %d Deployments not rolled out", pending, len(list.Items))
		}
		return nil
	})
}

// revisionsBySet counts, for each ReplicaSet of ns, its Pods by the
// revision graft's status record names; Pods without one count as
// uninjected in res.
func revisionsBySet(ctx context.Context, client kubernetes.Interface, ns string, res *canaryResult) (map[types.UID]map[string]int, error) {
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[types.UID]map[string]int{}
	for i := range list.Items {
		p := &list.Items[i]
		ref := metav1.GetControllerOf(p)
		if ref == nil || p.DeletionTimestamp != nil {
			continue
		}
		res.Pods++
		var rec struct {
			Templates []struct {
				Revision string `json:"revision"`
			} `json:"templates"`
		}
		raw, ok := p.Annotations[names.Status]
		if !ok || json.Unmarshal([]byte(raw), &rec) != nil || len(rec.Templates) == 0 {
			res.Uninjected++
			continue
		}
		if out[ref.UID] == nil {
			out[ref.UID] = map[string]int{}
		}
		out[ref.UID][rec.Templates[0].Revision]++
	}
	return out, nil
}
