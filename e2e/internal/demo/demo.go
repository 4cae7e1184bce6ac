// Package demo is a newcomer's first look at graft working, with no
// cluster: it starts a control plane and simulated nodes on loopback
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)
// and graft, opts a namespace in, rolls out a Deployment of three
// replicas, prints its Pods as they run with graft's sidecar, one of them
// as the API server stored it, and graft's decisions, and tears
// everything down. `make demo` runs it (e2e/cmd/demo); the e2e suite runs
// it too and holds the README's tour to its output.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/internal/names"
)

// replicas is the demo Deployment's size.
const replicas = 3

// Run starts the cluster opts describe (in a new directory under
// cluster.TempRoot, removed on success and kept, with the processes'
// logs, on failure), runs the demo on it, writes what happens to out,
// and tears the cluster down. repo is graft's repository, whose shipped
// webhook registration the demo applies.
func Run(ctx context.Context, out io.Writer, opts cluster.Options, repo string) (err error) {
	opts.Dir, err = os.MkdirTemp(cluster.TempRoot(), "graft-demo-")
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintf(out, "starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (%d simulated nodes) and graft on 127.0.0.1 ...\n", opts.Nodes)
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(startCtx, opts)
	defer func() {
		if c != nil {
			if stopErr := c.Stop(); stopErr != nil && err == nil {
				err = stopErr
			}
			fmt.Fprintln(out, "torn down")
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "demo: logs kept in %s\n", opts.Dir)
			return
		}
		os.RemoveAll(opts.Dir)
	}()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ready in %s: kube-apiserver %s, %d nodes Ready, graft %s\n",
		time.Since(start).Round(100*time.Millisecond), c.APIServerURL(), opts.Nodes, c.GraftAddr())

	shipped, err := cluster.LoadShipped(repo)
	if err != nil {
		return err
	}
	wh, err := c.RegisterGraft(ctx, shipped)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "registered MutatingWebhookConfiguration %q -> %s\n", wh.Name, *wh.Webhooks[0].ClientConfig.URL)

	const ns = "demo"
	if err := c.CreateNamespace(ctx, ns, map[string]string{names.Inject: "enabled"}); err != nil {
		return err
	}
	fmt.Fprintf(out, "created namespace %s with label %s=enabled\n", ns, names.Inject)
	if err := c.WaitInjecting(ctx, ns); err != nil {
		return err
	}

	rolled := time.Now()
	d, err := c.Client.AppsV1().Deployments(ns).Create(ctx, deployment(), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create Deployment: %w", err)
	}
	rollCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if d, err = c.WaitRolledOut(rollCtx, ns, d.Name); err != nil {
		return err
	}
	pods, err := c.WaitPodsReady(rollCtx, ns, "app=web", replicas)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\ncreated Deployment %s/%s (%d replicas, one container %q): rolled out in %s, %d/%d Ready\n",
		ns, d.Name, replicas, "web", time.Since(rolled).Round(100*time.Millisecond), d.Status.ReadyReplicas, replicas)
	printPods(out, pods)
	fmt.Fprintf(out, "\nPod %s as the API server stored it:\n", pods[0].Name)
	printPod(out, &pods[0])
	fmt.Fprintln(out, "\ngraft's decisions (its log):")
	printDecisions(out, c.GraftLog(1<<20), ns)
	fmt.Fprintf(out, "\ndone in %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// deployment is what a user would write: one container, nothing of graft.
func deployment() *appsv1.Deployment {
	n := int32(replicas)
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "web", Image: "registry.example/web:1.0"},
				}},
			},
		},
	}
}

// printPods prints one line per Pod: its node, how many of its containers
// (the sidecar among them) are ready, and its phase.
func printPods(out io.Writer, pods []corev1.Pod) {
	fmt.Fprintf(out, "  %-22s %-12s %-6s %-8s %s\n", "POD", "NODE", "READY", "STATUS", "CONTAINERS")
	for _, p := range pods {
		var ctrs []string
		total, ready := 0, 0
		for _, st := range p.Status.InitContainerStatuses {
			if st.Started != nil && *st.Started { // a native sidecar
				total++
				if st.Ready {
					ready++
				}
				ctrs = append(ctrs, st.Name+" (sidecar)")
			}
		}
		for _, st := range p.Status.ContainerStatuses {
			total++
			if st.Ready {
				ready++
			}
			ctrs = append(ctrs, st.Name)
		}
		fmt.Fprintf(out, "  %-22s %-12s %-6s %-8s %s\n", p.Name, p.Spec.NodeName, fmt.Sprintf("%d/%d", ready, total), p.Status.Phase, strings.Join(ctrs, ", "))
	}
}

func printPod(out io.Writer, p *corev1.Pod) {
	for _, c := range p.Spec.InitContainers {
		kind := "init container"
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			kind = "native sidecar"
		}
		fmt.Fprintf(out, "  %-15s %-12s %s mounts=%v\n", kind, c.Name, c.Image, mounts(c))
	}
	for _, c := range p.Spec.Containers {
		var env []string
		for _, e := range c.Env {
			env = append(env, e.Name)
		}
		fmt.Fprintf(out, "  %-15s %-12s %s env=%v mounts=%v\n", "container", c.Name, c.Image, env, mounts(c))
	}
	for _, v := range p.Spec.Volumes {
		fmt.Fprintf(out, "  %-15s %s\n", "volume", v.Name)
	}
	fmt.Fprintf(out, "  %-15s %s=%s\n", "annotation", names.Status, p.Annotations[names.Status])
}

// mounts lists a container's volume mounts as volume:path.
func mounts(c corev1.Container) []string {
	var out []string
	for _, m := range c.VolumeMounts {
		out = append(out, m.Name+":"+m.MountPath)
	}
	return out
}

// printDecisions prints graft's JSON log lines about Pods of namespace ns
// (a Deployment's Pods are named by the API server after admission, so
// graft knows each by its generateName).
func printDecisions(out io.Writer, log, ns string) {
	found := false
	for _, line := range strings.Split(log, "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) != nil || entry["namespace"] != ns || entry["dry_run"] == true {
			continue
		}
		found = true
		d := entry["duration"]
		if secs, ok := d.(float64); ok { // zap writes durations as seconds
			d = time.Duration(secs * float64(time.Second))
		}
		fmt.Fprintf(out, "  pod=%v decision=%v reason=%v profile=%v patch_ops=%v duration=%v\n",
			entry["pod"], entry["decision"], entry["reason"], entry["profile"], entry["patch_ops"], d)
	}
	if !found {
		fmt.Fprintf(out, "  (graft logged no line for namespace %s; the status annotations above are its record)\n", ns)
	}
}
