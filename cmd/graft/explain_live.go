package main

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
)

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
