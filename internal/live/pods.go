package live

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/graftdev/graft/audit"
)

// kindOf is the kind that `graft explain KIND/NAME` reads for kind as
// kubectl spells it (pod, deploy, sts, ...); ok is false for a kind it
// does not read.
func kindOf(kind string) (string, bool) {
	switch strings.ToLower(kind) {
	case "pod", "pods", "po":
		return "Pod", true
	case "deploy", "deployment", "deployments":
		return "Deployment", true
	case "sts", "statefulset", "statefulsets":
		return "StatefulSet", true
	case "ds", "daemonset", "daemonsets":
		return "DaemonSet", true
	case "rs", "replicaset", "replicasets":
		return "ReplicaSet", true
	case "job", "jobs":
		return "Job", true
	case "cj", "cronjob", "cronjobs":
		return "CronJob", true
	}
	return "", false
}

// ParseRef reads KIND/NAME as kubectl spells it (pod/web, deploy/web,
// ...) into the kind and the name; ok is false for anything else, or for
// a path that exists (a file is read as a manifest).
func ParseRef(arg string) (kind, name string, ok bool) {
	k, n, found := strings.Cut(arg, "/")
	kind, known := kindOf(k)
	if !found || !known || n == "" || strings.Contains(n, "/") {
		return "", "", false
	}
	if _, err := os.Stat(arg); err == nil {
		return "", "", false
	}
	return kind, n, true
}

// ReadPod reads, in the cluster's namespace, the Namespace and the Pod
// kind/name, or for a workload the Pod it would create now: what the
// webhook would be sent, and what audit needs of both.
func (cl *Cluster) ReadPod(ctx context.Context, kind, name string) (audit.Namespace, audit.Pod, error) {
	nsObj, err := cl.client.CoreV1().Namespaces().Get(ctx, cl.namespace, metav1.GetOptions{})
	if err != nil {
		return audit.Namespace{}, audit.Pod{}, fmt.Errorf("namespace %s: %w", cl.namespace, err)
	}
	p, err := livePod(ctx, cl.client, kind, cl.namespace, name)
	if err != nil {
		return audit.Namespace{}, audit.Pod{}, err
	}
	pod, err := auditPod(p)
	if err != nil {
		return audit.Namespace{}, audit.Pod{}, err
	}
	return auditNamespace(nsObj), pod, nil
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
