package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/graftdev/graft/internal/proc"
)

// NodeLabel marks the simulated nodes (value "kwok"), as kwokctl labels
// its own.
const NodeLabel = "type"

// kwokPodCIDR is where kwok takes the Pods' (never routed) addresses
// from: clear of the Service range (10.96.0.0/16) and of the network
// namespaces' subnets (10.200.0.0 and up), and large enough for a fleet.
const kwokPodCIDR = "10.128.0.0/12"

// kwokConfig raises how many Pods and Nodes kwok moves from stage to
// stage at once (4 each by default): each move is a status patch, a round
// trip to an API server that a fleet's creates keep busy, and at 4 at a
// time kwok readied a fleet's Pods at a few per second.
const kwokConfig = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 32
  nodePlayStageParallelism: 16
  nodeLeaseParallelism: 16
`

// startKwok runs kwok, which plays the kubelet of every node: with the
// stage files it is given, a Node goes Ready and renews its lease, and a
// Pod bound to one goes Running and Ready (Succeeded once its containers
// end, gone once deleted). It waits for kwok's health endpoint only; the
// nodes are created and waited for by addNodes.
func startKwok(ctx context.Context, bin, stages, dir string, a *apiServer) (*proc.Process, error) {
	kubeconfig := filepath.Join(dir, "kwok.kubeconfig")
	if err := a.writeKubeconfig(kubeconfig, kwokUser); err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(config, []byte(kwokConfig), 0o600); err != nil {
		return nil, fmt.Errorf("kwok: %w", err)
	}
	addrs, err := proc.FreeAddrs(1)
	if err != nil {
		return nil, err
	}
	p, err := proc.Start(proc.Spec{Name: "kwok", Dir: dir, Bin: bin, Args: []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + config,
		"--config=" + stages,
		// Only its own nodes: a real node's status and Pods are its
		// kubelet's.
		"--manage-nodes-with-label-selector=" + NodeLabel + "=kwok",
		"--server-address=" + addrs[0].String(),
		// As a kubelet does: a 40 s lease, renewed well within it, so
		// the node lifecycle controller never finds a node gone.
		"--node-lease-duration-seconds=40",
		"--cidr=" + kwokPodCIDR,
	}})
	if err != nil {
		return nil, err
	}
	hc := loopbackHTTPClient(nil, 2*time.Second)
	defer hc.CloseIdleConnections()
	err = proc.Poll(ctx, p, 100*time.Millisecond, func(ctx context.Context) error {
		return proc.GetOK(ctx, hc, "http://"+addrs[0].String()+"/healthz")
	})
	if err != nil {
		return p, fmt.Errorf("kwok: %w", err)
	}
	return p, nil
}

// NodeName is the name of the i-th simulated node, from 0.
func NodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// addNodes creates nodes simulated nodes, as a kubelet registers its
// own (kwok fills in their status: capacity, addresses, conditions), and
// waits until every one is Ready and without the not-ready taint the node
// lifecycle controller puts on a new node, so the scheduler takes it.
func addNodes(ctx context.Context, client kubernetes.Interface, kwok *proc.Process, nodes int) error {
	for i := range nodes {
		name := NodeName(i)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
				NodeLabel: "kwok",
			},
		}}
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("node %s: %w", name, err)
		}
	}
	err := proc.Poll(ctx, kwok, 200*time.Millisecond, func(ctx context.Context) error {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: NodeLabel + "=kwok"})
		if err != nil {
			return err
		}
		ready := 0
		for i := range list.Items {
			if nodeSchedulable(&list.Items[i]) {
				ready++
			}
		}
		if ready < nodes {
			return fmt.Errorf("%d of %d nodes Ready and schedulable", ready, nodes)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	return nil
}

// nodeSchedulable: Ready, and none of the taints a node carries until it
// is (node.kubernetes.io/not-ready, .../unreachable).
func nodeSchedulable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
