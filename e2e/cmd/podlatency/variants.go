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

	"encoding/json"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/proc"
	"github.com/graftdev/graft/templates"
	"github.com/graftdev/graft/webhook/certgen"
)

// variantLabel selects, by namespace, which mutation a Pod goes through.
const variantLabel = "bench.graft.dev/variant"

// variant is one way of adding graft's sidecars (or none).
type variant struct {
	name string
	ns   string
	// injected tells whether a stored Pod went through the mutation.
	injected func(*corev1.Pod) bool
	// webhook is the API server's name for the variant's mutating
	// webhook, "" for variants without one.
	webhook string
	// policy is the MutatingAdmissionPolicy a variant mutates with, "" for
	// none.
	policy string
}

// setups make the variants, in report order, "none" first: the others'
// overheads are over it. Each adds one namespace and whatever mutates its
// Pods; a new variant is one more entry here.
var setups = []func(context.Context, *bench) (variant, error){
	setupNone,
	setupGraft,
	setupGraftBare,
	setupGraftFloor,
	setupMinimal,
	setupReplay,
	setupConventional,
	setupPolicy,
	setupExport,
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

// setupNone is the baseline: a namespace nothing mutates.
func setupNone(ctx context.Context, b *bench) (variant, error) {
	has := injectedBy(b.sidecar)
	v := variant{name: "none", ns: "lat-none", injected: func(p *corev1.Pod) bool { return !has(p) }}
	return v, b.c.CreateNamespace(ctx, v.ns, nil)
}

// setupGraft registers the shipped webhooks for graft and the shipped
// ValidatingAdmissionPolicy that guarantees their result, as deploy/base
// installs them; its namespace opts in with the shipped label.
func setupGraft(ctx context.Context, b *bench) (variant, error) {
	v := variant{name: "graft", ns: "lat-graft", injected: injectedBy(b.sidecar)}
	wh, err := b.c.RegisterGraft(ctx, b.shipped)
	if err != nil {
		return v, err
	}
	i, err := injectWebhook(wh)
	if err != nil {
		return v, err
	}
	v.webhook = wh.Webhooks[i].Name
	policy, binding := b.shipped.Policy.DeepCopy(), b.shipped.Binding.DeepCopy()
	policy.ResourceVersion, binding.ResourceVersion = "", ""
	reg := b.c.Client.AdmissionregistrationV1()
	if _, err := reg.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return v, fmt.Errorf("ValidatingAdmissionPolicy: %w", err)
	}
	if _, err := reg.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return v, fmt.Errorf("ValidatingAdmissionPolicyBinding: %w", err)
	}
	return v, b.c.CreateNamespace(ctx, v.ns, map[string]string{names.Inject: "enabled", variantLabel: v.name})
}

// setupGraftBare is graft's webhook alone, to tell what the guarantee
// policy costs beside it: the shipped webhook for /inject pointed at the
// same graft, for its own namespace, without the policy.
func setupGraftBare(ctx context.Context, b *bench) (variant, error) {
	v := variant{name: "graft-bare", ns: "lat-graft-bare", injected: injectedBy(b.sidecar), webhook: "inject.graft-bare.bench.graft.dev"}
	return v, registerScoped(ctx, b, v, b.c.GraftAddr(), b.c.GraftCA(), func(*admissionregv1.MutatingWebhook) {})
}

// floorPolicy names the minimal ValidatingAdmissionPolicy graft's
// guarantee is measured beside.
const floorPolicy = "bench-floor-reads-init-containers"

// setupGraftFloor is graft's webhook, as for graft-bare, with the
// cheapest ValidatingAdmissionPolicy that looks at a Pod's sidecars at
// all in place of graft's guarantee: one matchCondition reading
// object.spec.initContainers, false for every Pod, so its validation
// never runs, as graft's matchCondition is false for a Pod graft
// injected. The ValidatingAdmissionPolicy plugin's time per create of
// these Pods is the floor any content check pays; graft's is judged
// against it.
func setupGraftFloor(ctx context.Context, b *bench) (variant, error) {
	v := variant{name: "graft-floor", ns: "lat-graft-floor", injected: injectedBy(b.sidecar), webhook: "inject.graft-floor.bench.graft.dev"}
	if err := registerScoped(ctx, b, v, b.c.GraftAddr(), b.c.GraftCA(), func(*admissionregv1.MutatingWebhook) {}); err != nil {
		return v, err
	}
	fail := admissionregv1.Fail
	equivalent := admissionregv1.Equivalent
	pol := &admissionregv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: floorPolicy},
		Spec: admissionregv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregv1.MatchResources{
				ResourceRules: []admissionregv1.NamedRuleWithOperations{{RuleWithOperations: admissionregv1.RuleWithOperations{
					Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
					Rule:       admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}},
				MatchPolicy: &equivalent,
			},
			MatchConditions: []admissionregv1.MatchCondition{{Name: "reads-init-containers",
				Expression: `size(object.spec.?initContainers.orValue([])) < 0`}},
			Validations: []admissionregv1.Validation{{Expression: "true"}},
		},
	}
	reg := b.c.Client.AdmissionregistrationV1()
	if _, err := reg.ValidatingAdmissionPolicies().Create(ctx, pol, metav1.CreateOptions{}); err != nil {
		return v, fmt.Errorf("floor ValidatingAdmissionPolicy: %w", err)
	}
	bind := &admissionregv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: floorPolicy},
		Spec: admissionregv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        floorPolicy,
			ValidationActions: []admissionregv1.ValidationAction{admissionregv1.Deny},
			MatchResources: &admissionregv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{variantLabel: v.name}},
			},
		},
	}
	if _, err := reg.ValidatingAdmissionPolicyBindings().Create(ctx, bind, metav1.CreateOptions{}); err != nil {
		return v, fmt.Errorf("floor ValidatingAdmissionPolicyBinding: %w", err)
	}
	return v, nil
}

// registerScoped registers the shipped webhook for the default profile
// (/inject), pointed at addr, for v's namespace alone, changed by edit, and
// creates the namespace.
func registerScoped(ctx context.Context, b *bench, v variant, addr string, ca []byte, edit func(*admissionregv1.MutatingWebhook)) error {
	wh := b.shipped.LoopbackWebhook(addr, ca)
	wh.Name = v.name
	i, err := injectWebhook(wh)
	if err != nil {
		return err
	}
	w := wh.Webhooks[i]
	w.Name = v.webhook
	w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{variantLabel: v.name}}
	edit(&w)
	wh.Webhooks = []admissionregv1.MutatingWebhook{w}
	if _, err := b.c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, wh, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("register %s webhook: %w", v.name, err)
	}
	return b.c.CreateNamespace(ctx, v.ns, map[string]string{variantLabel: v.name})
}

// setupConventional starts the bench's conventional webhook on loopback and
// registers the shipped webhook configuration pointed at it, selecting its
// own namespace. The process stops when the measurement ends.
func setupConventional(ctx context.Context, b *bench) (variant, error) {
	v := variant{name: "conventional", ns: "lat-conventional", injected: injectedBy(b.sidecar), webhook: "inject.conventional.bench.graft.dev"}
	certDir := filepath.Join(b.dir, "conventional-certs")
	certs, err := certgen.Generate(certgen.Options{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		return v, err
	}
	if err := certs.Write(certDir); err != nil {
		return v, err
	}
	addrs, err := proc.FreeAddrs(2)
	if err != nil {
		return v, err
	}
	addr, admin := addrs[0].String(), addrs[1].String()
	p, err := proc.Start(proc.Spec{Name: "conventional", Dir: b.dir, Bin: b.conventionalBin, Args: []string{
		"--addr", addr, "--admin-addr", admin,
		"--tls-cert", filepath.Join(certDir, certgen.CertFile), "--tls-key", filepath.Join(certDir, certgen.KeyFile),
	}})
	if err != nil {
		return v, err
	}
	// How stopping goes does not change the latencies already measured.
	b.onClose(func() { _ = p.Stop(5 * time.Second) })
	ready, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	err = proc.Poll(ready, p, 100*time.Millisecond, func(ctx context.Context) error {
		return proc.GetOK(ctx, hc, "http://"+admin+"/readyz")
	})
	if err != nil {
		return v, fmt.Errorf("conventional: %w", err)
	}
	// The shipped registration's webhook for the default profile (/inject),
	// with its rules and match conditions, pointed at the conventional peer.
	return v, registerScoped(ctx, b, v, addr, certs.CACert, func(*admissionregv1.MutatingWebhook) {})
}

// injectWebhook finds the webhook serving the default profile (/inject).
func injectWebhook(wh *admissionregv1.MutatingWebhookConfiguration) (int, error) {
	i := slices.IndexFunc(wh.Webhooks, func(w admissionregv1.MutatingWebhook) bool {
		return w.ClientConfig.URL != nil && strings.HasSuffix(*w.ClientConfig.URL, "/inject")
	})
	if i < 0 {
		return i, errors.New("the shipped webhook configuration has no webhook on /inject")
	}
	return i, nil
}

// setupPolicy creates a MutatingAdmissionPolicy that adds the init
// containers (and volumes) of graft's default profile with a JSONPatch:
// ApplyConfiguration cannot set atomic lists such as a container's args.
func setupPolicy(ctx context.Context, b *bench) (variant, error) {
	expr, err := defaultPatch()
	if err != nil {
		return variant{}, err
	}
	v := variant{name: "policy", ns: "lat-policy", injected: injectedBy(b.sidecar), policy: "graft-agent"}
	fail := admissionregv1.Fail
	pol := &admissionregv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: v.policy},
		Spec: admissionregv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregv1.RuleWithOperations{
					Operations: []admissionregv1.OperationType{admissionregv1.Create},
					Rule:       admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			MatchConditions: []admissionregv1.MatchCondition{{
				Name:       "not-injected",
				Expression: `!has(object.spec.initContainers) || !object.spec.initContainers.exists(c, c.name == "` + b.sidecar + `")`,
			}},
			FailurePolicy:      &fail,
			ReinvocationPolicy: admissionregv1.NeverReinvocationPolicy,
			Mutations: []admissionregv1.Mutation{{
				PatchType: admissionregv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregv1.JSONPatch{Expression: expr},
			}},
		},
	}
	if _, err := b.c.Client.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, pol, metav1.CreateOptions{}); err != nil {
		return v, fmt.Errorf("MutatingAdmissionPolicy: %w", err)
	}
	bind := &admissionregv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: v.policy},
		Spec: admissionregv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: pol.Name,
			MatchResources: &admissionregv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{variantLabel: v.name}},
			},
		},
	}
	if _, err := b.c.Client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, bind, metav1.CreateOptions{}); err != nil {
		return v, fmt.Errorf("MutatingAdmissionPolicyBinding: %w", err)
	}
	return v, b.c.CreateNamespace(ctx, v.ns, map[string]string{variantLabel: v.name})
}

// defaultFragment renders the templates of graft's default profile and
// returns their init containers and volumes.
func defaultFragment() (inits, vols []templates.Element, err error) {
	set, err := templates.Builtin()
	if err != nil {
		return nil, nil, err
	}
	cfg := inject.DefaultConfig()
	prof := cfg.Profiles[cfg.DefaultProfile]
	for _, tn := range prof.Templates {
		t, ok := set.Get(tn)
		if !ok {
			return nil, nil, fmt.Errorf("template %q is missing", tn)
		}
		f, err := t.Render(prof.Params[tn])
		if err != nil {
			return nil, nil, err
		}
		if len(f.Containers) > 0 || t.Placement != templates.PlaceFirst {
			return nil, nil, fmt.Errorf("template %s: the variants add first-placed init containers only", tn)
		}
		inits = append(inits, f.InitContainers...)
		vols = append(vols, f.Volumes...)
	}
	if len(inits) == 0 {
		return nil, nil, errors.New("the default profile injects no init container")
	}
	return inits, vols, nil
}

// defaultSidecar is the default profile's first init container: its name,
// by which a mutated Pod is recognised, and its JSON.
func defaultSidecar() (string, []byte, error) {
	inits, _, err := defaultFragment()
	if err != nil {
		return "", nil, err
	}
	return inits[0].Name, inits[0].Raw, nil
}

// defaultPatch writes the default profile's init containers and volumes as
// a CEL JSONPatch expression.
func defaultPatch() (string, error) {
	initEls, volEls, err := defaultFragment()
	if err != nil {
		return "", err
	}
	var inits, vols []string
	for _, el := range initEls {
		c, err := celJSON(el.Raw)
		if err != nil {
			return "", err
		}
		inits = append(inits, c)
	}
	for _, el := range volEls {
		v, err := celJSON(el.Raw)
		if err != nil {
			return "", err
		}
		vols = append(vols, v)
	}
	var atIndex, appendVols []string
	for i, c := range inits {
		atIndex = append(atIndex, fmt.Sprintf(`JSONPatch{op: "add", path: "/spec/initContainers/%d", value: %s}`, i, c))
	}
	for _, v := range vols {
		appendVols = append(appendVols, `JSONPatch{op: "add", path: "/spec/volumes/-", value: `+v+`}`)
	}
	expr := `(has(object.spec.initContainers) ? [` + strings.Join(atIndex, ", ") + `]` +
		` : [JSONPatch{op: "add", path: "/spec/initContainers", value: [` + strings.Join(inits, ", ") + `]}])`
	if len(vols) > 0 {
		expr += ` + (has(object.spec.volumes) ? [` + strings.Join(appendVols, ", ") + `]` +
			` : [JSONPatch{op: "add", path: "/spec/volumes", value: [` + strings.Join(vols, ", ") + `]}])`
	}
	return expr, nil
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
			last = errUnmutated
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s: mutation never took effect: %w", v.name, last)
}

// graftPatch is the JSONPatch graft's engine answers for the corpus Pod
// with the default configuration and built-in templates.
func graftPatch() ([]byte, error) { return graftPatchFor(corpus.Review(corpus.Small)) }

// graftPatchFor is the JSONPatch graft's engine answers for review with
// the default configuration and built-in templates.
func graftPatchFor(review []byte) ([]byte, error) {
	set, err := templates.Builtin()
	if err != nil {
		return nil, err
	}
	e, err := inject.New(inject.DefaultConfig(), set)
	if err != nil {
		return nil, err
	}
	out, _, err := e.Admit(nil, review, inject.Options{})
	if err != nil {
		return nil, err
	}
	var r struct {
		Response struct {
			Patch []byte `json:"patch"`
		} `json:"response"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, err
	}
	if len(r.Response.Patch) == 0 {
		return nil, errors.New("graft's engine answered the corpus Pod without a patch")
	}
	return r.Response.Patch, nil
}
