package live

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/audit"
)

// Audit classifies with a the Pods of namespace ("" every one) but those
// being deleted, reading
// every LIST in pages of chunk objects, and hands each Pod's result to
// out as it goes: what it keeps grows with namespaces, ReplicaSets, Jobs
// and workloads, never with Pods. The caller closes out with the report.
func (cl *Cluster) Audit(ctx context.Context, a *audit.Auditor, namespace string, chunk int64, out audit.Writer, start time.Time) (*audit.Report, error) {
	rep := audit.NewReport(start)
	// Namespaces whose labels select no webhook are reported though they
	// may have no Pods: under the guarantee, none can be created there.
	listed := func(nss map[string]audit.Namespace) {
		for _, name := range slices.Sorted(maps.Keys(nss)) {
			if r, ok := a.CheckNamespace(nss[name]); ok {
				rep.Namespaces = append(rep.Namespaces, r)
			}
		}
	}
	err := cl.classify(ctx, a, namespace, chunk, listed, func(_ audit.Namespace, _ audit.Pod, res *audit.PodResult) error {
		rep.Add(res)
		if err := out.Pod(res); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.Duration = time.Since(rep.Time)
	return rep, nil
}

// Classify classifies with a the Pods of namespace ("" every one) but
// those being deleted, in LIST pages of chunk objects, and hands each to each with its Namespace
// and the Pod as the audit read it (valid during the call only): what
// graft audit and graft rollout start from.
func (cl *Cluster) Classify(ctx context.Context, a *audit.Auditor, namespace string, chunk int64, each func(audit.Namespace, audit.Pod, *audit.PodResult) error) error {
	return cl.classify(ctx, a, namespace, chunk, nil, each)
}

// classify is Classify, handing listed (when not nil) the namespaces
// once they are listed, before any Pod.
func (cl *Cluster) classify(ctx context.Context, a *audit.Auditor, namespace string, chunk int64,
	listed func(map[string]audit.Namespace), each func(audit.Namespace, audit.Pod, *audit.PodResult) error) error {
	c := cl.client
	nss := map[string]audit.Namespace{}
	if namespace != "" {
		ns, err := c.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("namespace %s: %w", namespace, err)
		}
		nss[ns.Name] = auditNamespace(ns)
	} else {
		err := listPages(ctx, chunk, func(ctx context.Context, opts metav1.ListOptions) (*corev1.NamespaceList, string, error) {
			l, err := c.CoreV1().Namespaces().List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return l, l.Continue, nil
		}, func(l *corev1.NamespaceList) error {
			for i := range l.Items {
				nss[l.Items[i].Name] = auditNamespace(&l.Items[i])
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("listing namespaces: %w", err)
		}
	}
	if listed != nil {
		listed(nss)
	}
	own, err := loadOwners(ctx, c, namespace, chunk)
	if err != nil {
		return fmt.Errorf("listing owners: %w", err)
	}
	err = listPages(ctx, chunk, func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, string, error) {
		l, err := c.CoreV1().Pods(namespace).List(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		return l, l.Continue, nil
	}, func(l *corev1.PodList) error {
		for i := range l.Items {
			p := &l.Items[i]
			if p.DeletionTimestamp != nil {
				// Being deleted (deletionTimestamp is the API server's,
				// not the Pod author's): it is leaving, no rollout
				// changes it, and its replacement is audited instead.
				// Counting it would fail a --fail-on run right after
				// the rollout that replaced it, for its grace period.
				continue
			}
			ns, ok := nss[p.Namespace]
			if !ok { // created since the namespaces were listed
				got, err := c.CoreV1().Namespaces().Get(ctx, p.Namespace, metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("namespace %s: %w", p.Namespace, err)
				}
				ns = auditNamespace(got)
				nss[ns.Name] = ns
			}
			ap, err := auditPod(p)
			if err != nil {
				return err
			}
			v, err := a.Classify(ns, ap)
			if err != nil {
				return err
			}
			res := audit.PodResult{Namespace: p.Namespace, Name: p.Name,
				Workload: own.workload(p.Name, p.OwnerReferences), Verdict: v}
			if err := each(ns, ap, &res); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	return nil
}
