// Command demo is a newcomer's first look at graft working, with no
// cluster: it starts etcd, kube-apiserver and graft on loopback, opts a
// namespace in, creates a Pod, prints what was stored and graft's decision,
// and tears everything down. Run it with `make demo`.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/internal/names"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) (err error) {
	opts, err := cluster.OptionsFromEnv()
	if err != nil {
		return err
	}
	opts.Dir, err = os.MkdirTemp("", "graft-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(opts.Dir)

	fmt.Fprintln(out, "starting etcd, kube-apiserver and graft on 127.0.0.1 ...")
	start := time.Now()
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(startCtx, opts)
	defer func() {
		if err != nil && c != nil {
			fmt.Fprint(os.Stderr, c.Logs(16<<10))
		}
		if c != nil {
			if stopErr := c.Stop(); stopErr != nil && err == nil {
				err = stopErr
			}
			fmt.Fprintln(out, "torn down")
		}
	}()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ready in %s: kube-apiserver %s, graft %s\n",
		time.Since(start).Round(time.Millisecond), c.APIServerURL(), c.GraftAddr())

	shipped, err := cluster.LoadShipped("..")
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

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "web", Image: "registry.example/web:1.0"},
		}},
	}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Pod: %w", err)
	}
	stored, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get Pod: %w", err)
	}
	fmt.Fprintf(out, "\ncreated Pod %s/%s with one container %q; the API server stored:\n", ns, pod.Name, "web")
	printPod(out, stored)
	fmt.Fprintln(out, "\ngraft's decision (its log):")
	printDecisions(out, c.GraftLog(1<<20), pod.Name)
	return nil
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

// printDecisions prints graft's JSON log lines about the Pod named pod.
func printDecisions(out io.Writer, log, pod string) {
	found := false
	for _, line := range strings.Split(log, "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) != nil || entry["pod"] != pod {
			continue
		}
		found = true
		d := entry["duration"]
		if secs, ok := d.(float64); ok { // zap writes durations as seconds
			d = time.Duration(secs * float64(time.Second))
		}
		fmt.Fprintf(out, "  decision=%v reason=%v profile=%v patch_ops=%v duration=%v\n",
			entry["decision"], entry["reason"], entry["profile"], entry["patch_ops"], d)
	}
	if !found {
		fmt.Fprintf(out, "  (graft logged no line for Pod %s; the status annotation above is its record)\n", pod)
	}
}
