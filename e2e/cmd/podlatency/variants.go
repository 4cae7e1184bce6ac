package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/proc"
	"github.com/graftdev/graft/templates"
	"github.com/graftdev/graft/webhook/certgen"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// variantLabel selects, by namespace, which mutation a Pod goes through.
const variantLabel = "bench.graft.dev/variant"

// variant is one way of adding graft's sidecars (or none).
type variant struct {
	name string
	ns   string
	// injected tells whether a stored Pod went through the mutation.
	injected func(*corev1.Pod) bool
}

// injectedBy reports whether a Pod holds the init container called name.
func injectedBy(name string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		for _, c := range p.Spec.InitContainers {
			if c.Name == name {
				return true
			}
		}
		return false
	}
}

// setupGraft registers the shipped webhook for graft; its namespace opts in
// with the shipped label.
func setupGraft(ctx context.Context, c *cluster.Cluster, shipped *cluster.Shipped, sidecar string) (variant, error) {
	v := variant{name: "graft", ns: "lat-graft", injected: injectedBy(sidecar)}
	if _, err := c.RegisterGraft(ctx, shipped); err != nil {
		return v, err
	}
	return v, c.CreateNamespace(ctx, v.ns, map[string]string{cluster.InjectLabel: "enabled", variantLabel: v.name})
}

// setupConventional starts the bench's conventional webhook on loopback and
// registers the shipped webhook configuration pointed at it, selecting its
// own namespace. The caller stops the process it returns.
func setupConventional(ctx context.Context, c *cluster.Cluster, shipped *cluster.Shipped, bin, dir, sidecar string) (variant, *proc.Process, error) {
	v := variant{name: "conventional", ns: "lat-conventional", injected: injectedBy(sidecar)}
	certDir := filepath.Join(dir, "conventional-certs")
	b, err := certgen.Generate(certgen.Options{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		return v, nil, err
	}
	if err := b.Write(certDir); err != nil {
		return v, nil, err
	}
	addrs, err := proc.FreeAddrs(2)
	if err != nil {
		return v, nil, err
	}
	addr, admin := addrs[0].String(), addrs[1].String()
	p, err := proc.Start(proc.Spec{Name: "conventional", Dir: dir, Bin: bin, Args: []string{
		"--addr", addr, "--admin-addr", admin,
		"--tls-cert", filepath.Join(certDir, certgen.CertFile), "--tls-key", filepath.Join(certDir, certgen.KeyFile),
	}})
	if err != nil {
		return v, nil, err
	}
	ready, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	err = proc.Poll(ready, p, 100*time.Millisecond, func(ctx context.Context) error {
		return proc.GetOK(ctx, hc, "http://"+admin+"/readyz")
	})
	if err != nil {
		stopConventional(p)
		return v, nil, fmt.Errorf("conventional: %w", err)
	}
	// The shipped registration's webhook for the default profile (/inject),
	// with its rules and match conditions, pointed at the conventional peer.
	wh := shipped.LoopbackWebhook(addr, b.CACert)
	wh.Name = "conventional"
	i := slices.IndexFunc(wh.Webhooks, func(w admissionregv1.MutatingWebhook) bool {
		return w.ClientConfig.URL != nil && strings.HasSuffix(*w.ClientConfig.URL, "/inject")
	})
	if i < 0 {
		stopConventional(p)
		return v, nil, errors.New("the shipped webhook configuration has no webhook on /inject")
	}
	w := wh.Webhooks[i]
	w.Name = "inject.conventional.bench.graft.dev"
	w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{variantLabel: v.name}}
	wh.Webhooks = []admissionregv1.MutatingWebhook{w}
	if _, err := c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, wh, metav1.CreateOptions{}); err != nil {
		stopConventional(p)
		return v, nil, fmt.Errorf("register conventional webhook: %w", err)
	}
	return v, p, c.CreateNamespace(ctx, v.ns, map[string]string{variantLabel: v.name})
}

// stopConventional stops the conventional peer; how it went does not
// change the latencies already measured.
func stopConventional(p *proc.Process) { _ = p.Stop(5 * time.Second) }

// setupPolicy creates a MutatingAdmissionPolicy that adds the init
// containers (and volumes) of graft's default profile with a JSONPatch:
// ApplyConfiguration cannot set atomic lists such as a container's args.
func setupPolicy(ctx context.Context, c *cluster.Cluster) (variant, error) {
	sidecar, expr, err := defaultPatch()
	if err != nil {
		return variant{}, err
	}
	v := variant{name: "policy", ns: "lat-policy", injected: injectedBy(sidecar)}
	fail := admissionregv1.Fail
	pol := &admissionregv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "graft-agent"},
		Spec: admissionregv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregv1.RuleWithOperations{
					Operations: []admissionregv1.OperationType{admissionregv1.Create},
					Rule:       admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			MatchConditions: []admissionregv1.MatchCondition{{
				Name:       "not-injected",
				Expression: `!has(object.spec.initContainers) || !object.spec.initContainers.exists(c, c.name == "` + sidecar + `")`,
			}},
			FailurePolicy:      &fail,
			ReinvocationPolicy: admissionregv1.NeverReinvocationPolicy,
			Mutations: []admissionregv1.Mutation{{
				PatchType: admissionregv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregv1.JSONPatch{Expression: expr},
			}},
		},
	}
	if _, err := c.Client.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, pol, metav1.CreateOptions{}); err != nil {
		return v, fmt.Errorf("MutatingAdmissionPolicy: %w", err)
	}
	bind := &admissionregv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "graft-agent"},
		Spec: admissionregv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: pol.Name,
			MatchResources: &admissionregv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{variantLabel: v.name}},
			},
		},
	}
	if _, err := c.Client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, bind, metav1.CreateOptions{}); err != nil {
		return v, fmt.Errorf("MutatingAdmissionPolicyBinding: %w", err)
	}
	return v, c.CreateNamespace(ctx, v.ns, map[string]string{variantLabel: v.name})
}

// defaultPatch renders the templates of graft's default profile and
// writes their init containers and volumes as a CEL JSONPatch expression.
// It returns the first init container's name, by which a mutated Pod is
// recognised.
func defaultPatch() (name, expr string, err error) {
	set, err := templates.Builtin()
	if err != nil {
		return "", "", err
	}
	cfg := inject.DefaultConfig()
	prof := cfg.Profiles[cfg.DefaultProfile]
	var inits, vols []string
	for _, tn := range prof.Templates {
		t, ok := set.Get(tn)
		if !ok {
			return "", "", fmt.Errorf("template %q is missing", tn)
		}
		f, err := t.Render(prof.Params[tn])
		if err != nil {
			return "", "", err
		}
		if len(f.Containers) > 0 || t.Placement != templates.PlaceFirst {
			return "", "", fmt.Errorf("template %s: the policy variant adds first-placed init containers only", tn)
		}
		for _, el := range f.InitContainers {
			if name == "" {
				name = el.Name
			}
			c, err := celJSON(el.Raw)
			if err != nil {
				return "", "", err
			}
			inits = append(inits, c)
		}
		for _, el := range f.Volumes {
			v, err := celJSON(el.Raw)
			if err != nil {
				return "", "", err
			}
			vols = append(vols, v)
		}
	}
	if name == "" {
		return "", "", errors.New("the default profile injects no init container")
	}
	var atIndex, appendVols []string
	for i, c := range inits {
		atIndex = append(atIndex, fmt.Sprintf(`JSONPatch{op: "add", path: "/spec/initContainers/%d", value: %s}`, i, c))
	}
	for _, v := range vols {
		appendVols = append(appendVols, `JSONPatch{op: "add", path: "/spec/volumes/-", value: `+v+`}`)
	}
	expr = `(has(object.spec.initContainers) ? [` + strings.Join(atIndex, ", ") + `]` +
		` : [JSONPatch{op: "add", path: "/spec/initContainers", value: [` + strings.Join(inits, ", ") + `]}])`
	if len(vols) > 0 {
		expr += ` + (has(object.spec.volumes) ? [` + strings.Join(appendVols, ", ") + `]` +
			` : [JSONPatch{op: "add", path: "/spec/volumes", value: [` + strings.Join(vols, ", ") + `]}])`
	}
	return name, expr, nil
}

// waitInjecting polls dry-run creates of pod in v's namespace until the
// mutation shows: registrations take effect asynchronously.
func waitInjecting(ctx context.Context, client kubernetes.Interface, v variant, pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		p, err := client.CoreV1().Pods(v.ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err != nil:
			last = err
		case v.injected(p):
			return nil
		default:
			last = errors.New("dry-run Pod came back unmutated")
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s: mutation never took effect: %w", v.name, last)
}
