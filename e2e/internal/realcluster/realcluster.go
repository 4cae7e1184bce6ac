// Package realcluster runs graft as a platform team does: a control plane
// on loopback (package cluster) with real nodes (package node) and no
// simulated ones, graft's own image (`make images`) imported into each
// node, and deploy/base installed through its self-signed overlay exactly
// as docs/tasks/install.md says: graft runs as the shipped Deployment's
// Pods, the API server reaches them through the shipped Service (with
// --enable-aggregator-routing, as there is no kube-proxy: it dials an
// endpoint of the EndpointSlice the controller manager keeps), and the
// shipped registration and guarantee policies are in force.
//
// The sidecar images the built-in templates name are stand-ins where the
// real program cannot run here (package standin), imported under the
// templates' exact image names, so every Pod runs graft's specs as shipped.
package realcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/e2e/internal/images"
	"github.com/graftdev/graft/e2e/internal/node"
	"github.com/graftdev/graft/e2e/internal/standin"
	"github.com/graftdev/graft/templates"
)

// Env names what `make e2e` sets beside cluster.OptionsFromEnv's.
const (
	EnvKubelet    = "GRAFT_E2E_KUBELET"
	EnvGraftImage = "GRAFT_E2E_GRAFT_IMAGE"
)

// Image names of the harness's own images.
const (
	PauseImage = "localhost/graft-e2e/pause:1"
	// AppImage runs the tests' application container (standin.App).
	AppImage = "localhost/graft-e2e/app:1"
)

// Options say what to start.
type Options struct {
	Cluster cluster.Options
	// Kubelet is the kubelet binary; GraftImage graft's image archive.
	Kubelet, GraftImage string
	// Nodes is how many real nodes (1 if 0).
	Nodes int
	// RepoRoot is graft's repository (deploy/ is read from it).
	RepoRoot string
	// WithoutGraft leaves graft out: every node has graft's image under
	// the name deploy/ gives it, and nothing is installed, for a test
	// that installs graft as its reader would (e2e/docscluster).
	WithoutGraft bool
}

// OptionsFromEnv reads the cluster's options (with no simulated nodes),
// the kubelet's and graft's image's paths.
func OptionsFromEnv(repoRoot string) (Options, error) {
	co, err := cluster.OptionsFromEnv()
	co.Nodes = 0
	o := Options{Cluster: co, Kubelet: os.Getenv(EnvKubelet), GraftImage: os.Getenv(EnvGraftImage), Nodes: 1, RepoRoot: repoRoot}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if o.GraftImage == "" {
		errs = append(errs, fmt.Errorf("%s is not set (`make images` builds graft's image; `make e2e` sets it)", EnvGraftImage))
	} else if _, err := os.Stat(o.GraftImage); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", EnvGraftImage, err))
	}
	return o, errors.Join(errs...)
}

// Unavailable is why real nodes cannot run on this machine: the tests
// that need them skip with it, or fail under CI=true, where the project's
// own files must have installed what is missing.
type Unavailable struct{ Reason error }

func (u *Unavailable) Error() string { return "real nodes unavailable: " + u.Reason.Error() }

// Check returns an *Unavailable when this machine cannot run real nodes.
func Check(kubelet string) (node.Tools, error) {
	t, err := node.Check(kubelet)
	if err != nil {
		return t, &Unavailable{Reason: err}
	}
	return t, nil
}

// Cluster is a running control plane, its real nodes and graft as shipped.
type Cluster struct {
	*cluster.Cluster
	Nodes []*node.Node
	// Graft is graft installed from deploy/base (built, not applied,
	// with Options.WithoutGraft).
	Graft *Installed
	// Images maps each image name the Pods may run to its archive.
	Images map[string]string
	dir    string
}

// nodeSet is the nodes as cluster.Options.RealNodes returns them.
type nodeSet []*node.Node

func (s nodeSet) Close() error {
	var errs []error
	for _, n := range s {
		errs = append(errs, n.Stop())
	}
	return errors.Join(errs...)
}

func (s nodeSet) LogFiles() []string {
	var out []string
	for _, n := range s {
		out = append(out, n.LogFiles()...)
	}
	return out
}

// Start builds the images, starts the control plane and the nodes,
// imports the images into every node, and installs graft. On error the
// returned Cluster holds what started and the caller must still Stop it.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	tools, err := Check(o.Kubelet)
	if err != nil {
		return nil, err
	}
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	c := &Cluster{dir: o.Cluster.Dir}
	imageDir := filepath.Join(o.Cluster.Dir, "images")
	if err := os.MkdirAll(imageDir, 0o755); err != nil {
		return nil, err
	}
	// The images build while the control plane starts.
	var built map[string]string
	buildErr := make(chan error, 1)
	go func() {
		var err error
		built, err = BuildImages(ctx, imageDir)
		buildErr <- err
	}()
	pause, err := images.Build(ctx, imageDir, standin.Pause(PauseImage))
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(o.Cluster.Dir, "kubelet.kubeconfig")
	o.Cluster.RealNodes = func(ctx context.Context, cc *cluster.Cluster) (cluster.NodeSet, error) {
		if err := cc.WriteKubeconfig(kubeconfig); err != nil {
			return nil, err
		}
		var set nodeSet
		for i := range o.Nodes {
			n, err := node.Start(ctx, cc.Client, node.Options{
				Tools: tools, Name: fmt.Sprintf("real-node-%d", i), Dir: o.Cluster.Dir, Kubeconfig: kubeconfig,
				SandboxImage: PauseImage, SandboxArchive: pause, Graft: o.Cluster.Graft,
			})
			if n != nil {
				set = append(set, n)
				c.Nodes = append(c.Nodes, n)
			}
			if err != nil {
				return set, err
			}
		}
		return set, nil
	}
	c.Cluster, err = cluster.StartControlPlane(ctx, o.Cluster,
		// No kube-proxy: the API server dials a Service's endpoint itself.
		"--enable-aggregator-routing=true",
		// The kubelet registers its name as a Hostname address, which
		// nothing here resolves: reach it at its InternalIP.
		"--kubelet-preferred-address-types=InternalIP",
	)
	if err != nil {
		return c, err
	}
	if err := <-buildErr; err != nil {
		return c, err
	}
	c.Images = built
	for _, n := range c.Nodes {
		if err := importAll(ctx, n, built); err != nil {
			return c, err
		}
	}
	if c.Graft, err = Build(ctx, o.Cluster.Dir, o.RepoRoot, o.Cluster.Graft); err != nil {
		return c, err
	}
	for _, n := range c.Nodes {
		if err := n.ImportAs(ctx, o.GraftImage, c.Graft.Image); err != nil {
			return c, err
		}
	}
	if o.WithoutGraft {
		return c, nil
	}
	if err := c.Graft.Apply(ctx, c.Cluster); err != nil {
		return c, err
	}
	if err := c.Graft.WaitReady(ctx, c.Cluster); err != nil {
		return c, err
	}
	return c, nil
}

func importAll(ctx context.Context, n *node.Node, archives map[string]string) error {
	names := make([]string, 0, len(archives))
	for name := range archives {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := n.Import(ctx, archives[name]); err != nil {
			return err
		}
	}
	return nil
}

// BuildImages builds into dir the tests' app image and a stand-in for
// each built-in template's default image, and returns their archives by
// image name.
func BuildImages(ctx context.Context, dir string) (map[string]string, error) {
	specs := []images.Spec{standin.App(AppImage)}
	defaults, err := TemplateImages()
	if err != nil {
		return nil, err
	}
	for tpl, image := range defaults {
		if s, ok := standin.ForTemplate(tpl, image); ok {
			specs = append(specs, s)
		}
	}
	var mu sync.Mutex
	out := map[string]string{}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, s := range specs {
		g.Go(func() error {
			path, err := images.Build(ctx, dir, s)
			if err != nil {
				return err
			}
			mu.Lock()
			out[s.Name] = path
			mu.Unlock()
			return nil
		})
	}
	return out, g.Wait()
}

// TemplateImages returns each built-in template's default image.
func TemplateImages() (map[string]string, error) {
	set, err := templates.Builtin()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, name := range set.Names() {
		tpl, _ := set.Get(name)
		for _, p := range tpl.Params {
			if p.Name == "image" {
				out[name] = p.Default
			}
		}
	}
	return out, nil
}

// Stop stops graft's Pods with the nodes, then the control plane.
func (c *Cluster) Stop() error {
	if c.Cluster == nil {
		return nodeSet(c.Nodes).Close()
	}
	return c.Cluster.Stop()
}

// Logs are the processes' and nodes' last logs.
func (c *Cluster) Logs(max int64) string {
	var b strings.Builder
	if c.Cluster != nil {
		b.WriteString(c.Cluster.Logs(max))
	}
	for _, n := range c.Nodes {
		b.WriteString(n.Logs(max))
	}
	return b.String()
}

// NodeFor returns the node a Pod runs on.
func (c *Cluster) NodeFor(pod *corev1.Pod) (*node.Node, error) {
	for _, n := range c.Nodes {
		if n.Name == pod.Spec.NodeName {
			return n, nil
		}
	}
	return nil, fmt.Errorf("pod %s/%s is on %q, not a real node", pod.Namespace, pod.Name, pod.Spec.NodeName)
}

// graftCerts runs `graft certs` as install.md tells users to.
func graftCerts(ctx context.Context, graft string, args ...string) error {
	out, err := exec.CommandContext(ctx, graft, append([]string{"certs"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("graft certs %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// poll calls check every interval until it returns nil or ctx ends.
func poll(ctx context.Context, interval time.Duration, check func(context.Context) error) error {
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(interval):
		}
	}
}
