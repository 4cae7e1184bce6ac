package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/inject"
)

// fromCluster: the namespace's labels were read from the cluster.
const fromCluster = "cluster"

// liveKinds maps what `graft explain KIND/NAME` accepts, as kubectl
// spells it, to the kind.
var liveKinds = map[string]string{
	"pod": "Pod", "pods": "Pod", "po": "Pod",
	"deploy": "Deployment", "deployment": "Deployment", "deployments": "Deployment",
	"sts": "StatefulSet", "statefulset": "StatefulSet", "statefulsets": "StatefulSet",
	"ds": "DaemonSet", "daemonset": "DaemonSet", "daemonsets": "DaemonSet",
	"rs": "ReplicaSet", "replicaset": "ReplicaSet", "replicasets": "ReplicaSet",
	"job": "Job", "jobs": "Job",
	"cj": "CronJob", "cronjob": "CronJob", "cronjobs": "CronJob",
}

// liveRef reads KIND/NAME; ok is false for anything else, or for a path
// that exists (a file is read as a manifest).
func liveRef(arg string) (kind, name string, ok bool) {
	k, n, found := strings.Cut(arg, "/")
	kind, known := liveKinds[strings.ToLower(k)]
	if !found || !known || n == "" || strings.Contains(n, "/") {
		return "", "", false
	}
	if _, err := os.Stat(arg); err == nil {
		return "", "", false
	}
	return kind, n, true
}

// explainLive explains a Pod, or a workload's Pod template, read from the
// cluster with its Namespace: the webhook's decision for it as if created
// now, and for a Pod its audit class.
func explainLive(cmd *cobra.Command, f *offlineFlags, cf *clusterFlags, kind, name string) error {
	for _, fl := range []string{"profile", "revision", "namespace-labels", "filename"} {
		if cmd.Flags().Changed(fl) {
			return fmt.Errorf("explain %s/%s reads the namespace's labels from the cluster: --%s does not apply", strings.ToLower(kind), name, fl)
		}
	}
	if err := checkFormat(f.output, f.formats...); err != nil {
		return err
	}
	engine, err := newOfflineEngine(f.config, f.templatesDir, "", "")
	if err != nil {
		return err
	}
	c, ns, err := cf.clientAndNamespace(f.namespace)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	nsObj, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	pod, err := livePod(ctx, c, kind, ns, name)
	if err != nil {
		return err
	}
	auditor := audit.New(engine)
	out, err := explainPod(engine, auditor, auditNamespace(nsObj), pod)
	if err != nil {
		return err
	}
	out.Source, out.Object = fromCluster, strings.ToLower(kind)+"/"+name
	if kind == "Pod" {
		ap, err := auditPod(pod)
		if err != nil {
			return err
		}
		v, err := auditor.Classify(auditNamespace(nsObj), ap)
		if err != nil {
			return err
		}
		out.Audit = &explainedAudit{Class: string(v.Class), Cause: v.Cause, Revision: v.Revision, Detail: v.Detail}
	}
	var buf strings.Builder
	if f.output == "json" {
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		buf.Write(append(b, '\n'))
	} else if err := writeExplanationText(&buf, out); err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write([]byte(buf.String()))
	return err
}

// explainPod runs pod through the engine as the webhook its namespace
// selects would.
func explainPod(engine offlineEngine, a *audit.Auditor, ns audit.Namespace, pod *corev1.Pod) (*explained, error) {
	out := &explained{Namespace: ns.Name, LabelFrom: fromCluster, Templates: []string{}, Params: []explainedParam{},
		Warnings: []string{}, Patch: []patchOp{}}
	sel := a.Select(ns)
	out.Label, out.excluded = sel.Label, sel.Reason == "namespace-excluded"
	if sel.Profile == "" {
		out.Decision, out.Reason, out.Message = "not-selected", sel.Reason, sel.Why
		return out, nil
	}
	ap, err := auditPod(pod)
	if err != nil {
		return nil, err
	}
	ex, err := engine.Explain(audit.Review(ap), inject.Options{Profile: sel.Profile, Revision: sel.Revision, PodSecurity: sel.PodSecurity})
	if err != nil {
		return nil, err
	}
	out.fill(ex)
	if len(ex.Patch) > 0 {
		if err := json.Unmarshal(ex.Patch, &out.Patch); err != nil {
			return nil, fmt.Errorf("engine patch: %w", err)
		}
	}
	return out, nil
}

// livePod reads the Pod, or builds the Pod a workload would create now:
// its template, with the controller reference its Pods carry (a canary
// split hashes its uid), in the object's namespace.
func livePod(ctx context.Context, c kubernetes.Interface, kind, ns, name string) (*corev1.Pod, error) {
	get := metav1.GetOptions{}
	var meta metav1.ObjectMeta
	var tmpl corev1.PodTemplateSpec
	var err error
	switch kind {
	case "Pod":
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, get)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", ns, name, err)
		}
		return p, nil
	case "Deployment":
		d, e := c.AppsV1().Deployments(ns).Get(ctx, name, get)
		if e == nil {
			tmpl = d.Spec.Template
			meta, err = newestReplicaSet(ctx, c, ns, d.UID, d.Spec.Selector)
		}
		err = errors.Join(e, err)
	case "StatefulSet":
		s, e := c.AppsV1().StatefulSets(ns).Get(ctx, name, get)
		if e == nil {
			meta, tmpl = s.ObjectMeta, s.Spec.Template
		}
		err = e
	case "DaemonSet":
		d, e := c.AppsV1().DaemonSets(ns).Get(ctx, name, get)
		if e == nil {
			meta, tmpl = d.ObjectMeta, d.Spec.Template
		}
		err = e
	case "ReplicaSet":
		r, e := c.AppsV1().ReplicaSets(ns).Get(ctx, name, get)
		if e == nil {
			meta, tmpl = r.ObjectMeta, r.Spec.Template
		}
		err = e
	case "Job":
		j, e := c.BatchV1().Jobs(ns).Get(ctx, name, get)
		if e == nil {
			meta, tmpl = j.ObjectMeta, j.Spec.Template
		}
		err = e
	case "CronJob":
		// Its next Job does not exist yet: no controller uid to hash.
		j, e := c.BatchV1().CronJobs(ns).Get(ctx, name, get)
		if e == nil {
			tmpl = j.Spec.JobTemplate.Spec.Template
		}
		err = e
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", strings.ToLower(kind), ns, name, err)
	}
	p := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	p.Namespace = ns
	if meta.UID != "" {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{Kind: controllerKind(kind), Name: meta.Name, UID: meta.UID, Controller: &yes}}
	}
	return p, nil
}

// controllerKind is the kind of the controller of kind's Pods.
func controllerKind(kind string) string {
	if kind == "Deployment" {
		return "ReplicaSet"
	}
	return kind
}

// newestReplicaSet is the Deployment's ReplicaSet of the highest
// deployment.kubernetes.io/revision: the one creating its Pods now.
// Empty when it has none yet.
func newestReplicaSet(ctx context.Context, c kubernetes.Interface, ns string, owner types.UID, sel *metav1.LabelSelector) (metav1.ObjectMeta, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		s = labels.Everything()
	}
	l, err := c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: s.String()})
	if err != nil {
		return metav1.ObjectMeta{}, err
	}
	var best metav1.ObjectMeta
	bestRev := -1
	for _, rs := range l.Items {
		ref := metav1.GetControllerOfNoCopy(&rs)
		if ref == nil || ref.UID != owner {
			continue
		}
		if rev, _ := strconv.Atoi(rs.Annotations["deployment.kubernetes.io/revision"]); rev > bestRev {
			best, bestRev = rs.ObjectMeta, rev
		}
	}
	return best, nil
}
