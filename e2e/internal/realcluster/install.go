package realcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/internal/names"
)

// Overlay is the kustomization the harness installs: the base with a
// certificate made by `graft certs`, for clusters without cert-manager.
const Overlay = "overlays/self-signed"

// Installed is graft as installed from deploy/.
type Installed struct {
	// Objects are what kustomize built, as applied.
	Objects []*unstructured.Unstructured
	// Deployment is graft's, as built.
	Deployment *appsv1.Deployment
	// Image is the image graft's Deployment runs, as the kustomization
	// names it; the node gets graft's image archive under that name.
	Image string
	// Config is deploy/base/config.yaml as shipped.
	Config []byte
	// Dir is the copy of deploy/ built from.
	Dir string
}

// Build builds deploy/'s self-signed overlay from a copy of the
// repository's deploy/ in dir (certificates made by `graft certs
// --kustomize`, as install.md says).
func Build(ctx context.Context, dir, repoRoot, graftBin string) (*Installed, error) {
	in := &Installed{Dir: filepath.Join(dir, "deploy")}
	src := filepath.Join(repoRoot, "deploy")
	if err := os.CopyFS(in.Dir, os.DirFS(src)); err != nil {
		return nil, fmt.Errorf("copy deploy/: %w", err)
	}
	overlay := filepath.Join(in.Dir, Overlay)
	if err := graftCerts(ctx, graftBin, "--out", filepath.Join(overlay, "certs"), "--kustomize"); err != nil {
		return nil, err
	}
	var err error
	if in.Config, err = os.ReadFile(filepath.Join(src, "base", "config.yaml")); err != nil {
		return nil, err
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", Overlay, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, err
	}
	if in.Objects, err = decode(out); err != nil {
		return nil, err
	}
	for _, o := range in.Objects {
		if o.GetKind() == "Deployment" && o.GetName() == "graft" {
			in.Deployment = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, in.Deployment); err != nil {
				return nil, err
			}
		}
	}
	if in.Deployment == nil || len(in.Deployment.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("%s builds no Deployment graft", Overlay)
	}
	in.Image = in.Deployment.Spec.Template.Spec.Containers[0].Image
	return in, nil
}

// ApplyYAML applies, server-side, every object of a YAML stream (what
// `graft guarantee` writes, say), as `kubectl apply --server-side` would.
func (c *Cluster) ApplyYAML(ctx context.Context, data []byte) error {
	objs, err := decode(data)
	if err != nil {
		return err
	}
	return apply(ctx, c.Cluster, objs)
}

// ApplyObjects applies objects server-side.
func (c *Cluster) ApplyObjects(ctx context.Context, objs []*unstructured.Unstructured) error {
	return apply(ctx, c.Cluster, objs)
}

// Apply creates every object the overlay holds. The nodes must have
// graft's image by then: nothing can pull it.
func (in *Installed) Apply(ctx context.Context, c *cluster.Cluster) error {
	return apply(ctx, c, in.Objects)
}

func decode(data []byte) ([]*unstructured.Unstructured, error) {
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// apply creates objects with server-side apply, namespaces first, as
// `kubectl apply --server-side` would.
func apply(ctx context.Context, c *cluster.Cluster, objs []*unstructured.Unstructured) error {
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))
	ordered := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			ordered = append(ordered, o)
		}
	}
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			ordered = append(ordered, o)
		}
	}
	for _, o := range ordered {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		data, err := o.MarshalJSON()
		if err != nil {
			return err
		}
		force := true
		if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "graft-e2e", Force: &force}); err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// WaitReady waits until graft's Deployment has every replica ready and
// a dry-run Pod create in an opted-in namespace comes back injected: the
// API server reaches graft through its Service.
func (in *Installed) WaitReady(ctx context.Context, c *cluster.Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	d := in.Deployment
	err := poll(ctx, 500*time.Millisecond, func(ctx context.Context) error {
		got, err := c.Client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := int32(1)
		if got.Spec.Replicas != nil {
			want = *got.Spec.Replicas
		}
		if got.Status.ObservedGeneration < got.Generation || got.Status.AvailableReplicas < want || got.Status.UpdatedReplicas < want {
			return fmt.Errorf("deployment %s/%s: %d of %d replicas available", d.Namespace, d.Name, got.Status.AvailableReplicas, want)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("graft as shipped: %w\n%s", err, podsReport(context.Background(), c, d.Namespace))
	}
	const probe = "graft-e2e-probe"
	if err := c.CreateNamespace(ctx, probe, map[string]string{names.Inject: "enabled"}); err != nil && !apierrors.IsAlreadyExists(errors.Unwrap(err)) {
		return err
	}
	return c.WaitInjecting(ctx, probe)
}

// podsReport says what each Pod of a namespace is waiting on.
func podsReport(ctx context.Context, c *cluster.Cluster, ns string) string {
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b bytes.Buffer
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s on %q: %s\n", p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			fmt.Fprintf(&b, "  %s: ready=%v restarts=%d %s\n", cs.Name, cs.Ready, cs.RestartCount, stateText(cs.State))
		}
		for _, cond := range p.Status.Conditions {
			if cond.Status != corev1.ConditionTrue && cond.Message != "" {
				fmt.Fprintf(&b, "  %s: %s\n", cond.Type, cond.Message)
			}
		}
	}
	events, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning {
				fmt.Fprintf(&b, "event %s %s: %s\n", e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
	return b.String()
}

// PodsReport says what each Pod of namespace ns is waiting on, and the
// namespace's Warning events, for a failing test's message.
func (c *Cluster) PodsReport(ctx context.Context, ns string) string {
	return podsReport(ctx, c.Cluster, ns)
}

func stateText(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running since " + s.Running.StartedAt.String()
	case s.Terminated != nil:
		return fmt.Sprintf("terminated %d %s %s", s.Terminated.ExitCode, s.Terminated.Reason, s.Terminated.Message)
	case s.Waiting != nil:
		return "waiting " + s.Waiting.Reason + " " + s.Waiting.Message
	}
	return "no state"
}
