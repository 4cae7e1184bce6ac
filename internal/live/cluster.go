// Package live is graft's reading of a running cluster, for graft audit
// and graft explain KIND/NAME: paged LISTs and GETs of Namespaces, Pods
// and the workloads that own them, turned into what package audit and
// the engine take; and graft serve's TokenReviews of the API server's
// token. It is the only user of client-go in graft's module (a test
// holds that).
package live

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/internal/names"
)

// Config says how to reach a cluster: with a kubeconfig (Kubeconfig,
// else $KUBECONFIG, else ~/.kube/config), else as the in-cluster
// ServiceAccount.
type Config struct {
	Kubeconfig string
	// Context is the kubeconfig context; "" the current one.
	Context string
	// Timeout bounds each request to the API server.
	Timeout time.Duration
	// UserAgent is what graft calls itself to the API server.
	UserAgent string
	// Namespace is the namespace to work in; "" the kubeconfig context's
	// (in a cluster, the Pod's own), else "default", as kubectl chooses.
	Namespace string
}

// Cluster is a cluster graft reads, and the namespace it works in.
type Cluster struct {
	client    kubernetes.Interface
	namespace string
}

// Connect builds a client speaking protobuf, the API server's cheapest
// encoding to produce and decode. It sends no request.
func Connect(cfg Config) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
	namespace := cfg.Namespace
	if namespace == "" {
		var err error
		if namespace, _, err = cc.Namespace(); err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.QPS, rc.Burst = 50, 100
	rc.Timeout = cfg.Timeout
	rc.UserAgent = cfg.UserAgent
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Cluster{client: c, namespace: namespace}, nil
}

// Namespace is the namespace the cluster's reads of one object work in
// (Config.Namespace, or the kubeconfig's).
func (cl *Cluster) Namespace() string { return cl.namespace }

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
	out.Status, out.HasStatus = p.Annotations[names.Status]
	out.Containers = make([]string, 0, len(p.Spec.InitContainers)+len(p.Spec.Containers))
	for _, c := range p.Spec.InitContainers {
		out.Containers = append(out.Containers, c.Name)
	}
	for _, c := range p.Spec.Containers {
		out.Containers = append(out.Containers, c.Name)
	}
	return out, nil
}
