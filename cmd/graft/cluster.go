package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
)

// clusterFlags say how the live commands (audit, explain KIND/NAME) reach
// a cluster: a kubeconfig (--kubeconfig, else $KUBECONFIG, else
// ~/.kube/config), else the in-cluster ServiceAccount.
type clusterFlags struct {
	kubeconfig string
	context    string
	timeout    time.Duration
}

func (f *clusterFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)")
	fl.StringVar(&f.context, "context", "", "kubeconfig context (default: the current one)")
	fl.DurationVar(&f.timeout, "request-timeout", 30*time.Second, "timeout of each request to the API server")
}

// client builds a clientset speaking protobuf, the API server's cheapest
// encoding to produce and decode.
func (f *clusterFlags) client() (kubernetes.Interface, error) {
	c, _, err := f.clientAndNamespace("")
	return c, err
}

// clientAndNamespace is client, and the namespace to use: namespace if
// given, else the kubeconfig context's (in a cluster, the Pod's own),
// else "default", as kubectl chooses.
func (f *clusterFlags) clientAndNamespace(namespace string) (kubernetes.Interface, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
	if namespace == "" {
		var err error
		if namespace, _, err = cc.Namespace(); err != nil {
			return nil, "", fmt.Errorf("kubeconfig: %w", err)
		}
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.QPS, cfg.Burst = 50, 100
	cfg.Timeout = f.timeout
	cfg.UserAgent = "graft/" + version
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("kubernetes client: %w", err)
	}
	return c, namespace, nil
}

// listPages LISTs in pages of chunk items (Limit and Continue), handing
// each page to each before asking for the next: memory holds one page.
func listPages[L any](ctx context.Context, chunk int64, list func(context.Context, metav1.ListOptions) (L, string, error), each func(L) error) error {
	opts := metav1.ListOptions{Limit: chunk}
	for {
		page, cont, err := list(ctx, opts)
		if err != nil {
			return err
		}
		if err := each(page); err != nil {
			return err
		}
		if cont == "" {
			return nil
		}
		opts.Continue = cont
	}
}

// auditNamespace is what audit needs of a Namespace.
func auditNamespace(ns *corev1.Namespace) audit.Namespace {
	return audit.Namespace{Name: ns.Name, Labels: ns.Labels, InjectLabelTime: labelWritten(ns.ManagedFields, names.Inject)}
}

// labelWritten is the latest time a managedFields entry that owns the
// label key was written: when the label was last set, as near as the API
// server records it. Zero when no entry owns it.
func labelWritten(entries []metav1.ManagedFieldsEntry, key string) time.Time {
	var at time.Time
	for _, e := range entries {
		if e.Time == nil || e.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Labels map[string]json.RawMessage `json:"f:labels"`
			} `json:"f:metadata"`
		}
		if json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		if _, ok := fields.Metadata.Labels["f:"+key]; ok && e.Time.After(at) {
			at = e.Time.Time
		}
	}
	return at
}

// auditPod is what audit needs of a Pod: its JSON as the webhook would be
// sent it, and the few fields read before the engine is.
func auditPod(p *corev1.Pod) (audit.Pod, error) {
	p.APIVersion, p.Kind = "v1", "Pod"
	// The API server's bookkeeping is never in a CREATE request; leaving
	// it out keeps the engine's reading short.
	p.ManagedFields = nil
	raw, err := json.Marshal(p)
	if err != nil {
		return audit.Pod{}, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	out := audit.Pod{Namespace: p.Namespace, Name: p.Name, Created: p.CreationTimestamp.Time, Labels: p.Labels, JSON: raw}
	out.Status, out.HasStatus = p.Annotations[inject.StatusAnnotation]
	out.Containers = make([]string, 0, len(p.Spec.InitContainers)+len(p.Spec.Containers))
	for _, c := range p.Spec.InitContainers {
		out.Containers = append(out.Containers, c.Name)
	}
	for _, c := range p.Spec.Containers {
		out.Containers = append(out.Containers, c.Name)
	}
	return out, nil
}
