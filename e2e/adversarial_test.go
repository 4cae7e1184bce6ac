package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	regv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/registration"
	"github.com/graftdev/graft/internal/vapeval"
	"github.com/graftdev/graft/templates"
)

// Issue 32: graft's guarantee holds against Pod authors. Each case is
// tried as a hostile Pod author would, through kube-apiserver with the
// shipped guarantee of the profile bound to the test's namespaces and
// graft's webhook reached as deploy/ ships it (or bypassed, as when it
// fails open): every one ends refused with graft's or the policy's message,
// or with graft's own container in the stored Pod, never with the Pod's.
// Both graft and the policy decide by content (GUARANTEE-SPEC), so each
// side is asserted in its own words, naming the container and the field.

// adversary is a namespace whose Pods graft injects with one profile, by a
// copy of the shipped webhook (path /inject/<profile>), and the shipped
// guarantee of that profile bound to it; bypassed is a namespace with the
// same guarantee and no webhook, as if graft failed open.
type adversary struct {
	profile           string
	served, bypassed  string
	webhookName       string
	policyName        string
	forgedStatus      string // a record graft wrote for a real Pod of the profile
	forgedInjected    string
	realPod           *corev1.Pod
	injectedContainer string // the profile's native sidecar
}

// newAdversary sets up profile's namespaces (prefix names them).
func newAdversary(t *testing.T, prefix, profile string, reviewVersions ...string) *adversary {
	t.Helper()
	a := &adversary{profile: profile}
	a.served = newNamespace(t, prefix, map[string]string{names.Inject: "e2e-adversary"})
	a.bypassed = newNamespace(t, prefix+"-bypassed", map[string]string{names.Inject: "e2e-adversary"})
	probe := newNamespace(t, prefix+"-probe", nil)
	hook := scopedGraftWebhook(prefix+".adversary.e2e.graft.dev", a.served, "/inject/"+profile)
	if len(reviewVersions) > 0 {
		hook.AdmissionReviewVersions = reviewVersions
	}
	a.webhookName = hook.Name
	registerWebhooks(t, "graft-e2e-"+prefix, hook)
	a.policyName = bindShippedGuarantee(t, profile, a.served, a.bypassed, probe)
	waitFor(t, "graft to inject in "+a.served, func(ctx context.Context) error {
		p, err := env.client.CoreV1().Pods(a.served).Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if !isInjected(p) {
			return errors.New("not injected yet")
		}
		return nil
	})
	a.realPod = createPod(t, a.served, simplePod("real"))
	a.forgedStatus = a.realPod.Annotations[names.Status]
	a.forgedInjected = a.realPod.Labels[names.Injected]
	for _, c := range a.realPod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways && a.injectedContainer == "" {
			a.injectedContainer = c.Name
		}
	}
	if a.forgedStatus == "" || a.injectedContainer == "" {
		t.Fatalf("graft did not inject %s's native sidecar: %s", profile, containerNames(a.realPod))
	}
	return a
}

// bindShippedGuarantee installs a copy of profile's shipped guarantee (its
// policy for namespaces without graft.dev/rev, and that binding) selecting
// the namespaces nss only, and returns its name once the API server
// enforces it: a create in the last namespace, which must be one graft
// does not serve, is refused for want of graft's sidecars.
func bindShippedGuarantee(t *testing.T, profile string, nss ...string) string {
	t.Helper()
	policy, binding := shippedGuarantee(t, profile)
	return bindGuaranteeCopy(t, policy, binding, nss...)
}

// bindGuaranteeCopy is bindShippedGuarantee for any guarantee: it renames
// policy and binding and installs them selecting nss only.
func bindGuaranteeCopy(t *testing.T, policy *regv1.ValidatingAdmissionPolicy, binding *regv1.ValidatingAdmissionPolicyBinding, nss ...string) string {
	t.Helper()
	name := policy.Name + "-" + nss[0]
	policy.Name, binding.Name, binding.Spec.PolicyName = name, name, name
	policy.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: nss},
	}}
	installPolicy(t, policy, binding)
	probe := nss[len(nss)-1]
	waitFor(t, "the guarantee to take effect", func(ctx context.Context) error {
		_, err := env.client.CoreV1().Pods(probe).Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), name) {
			return fmt.Errorf("not refused by %s yet: %v", name, err)
		}
		return nil
	})
	return name
}

// forged is a Pod carrying the record and label of a real injection.
func (a *adversary) forged(name string) *corev1.Pod {
	p := simplePod(name)
	p.Labels = map[string]string{names.Injected: a.forgedInjected}
	p.Annotations = map[string]string{names.Status: a.forgedStatus}
	return p
}

// realContainer is the real injection's container called name, as a Pod
// author copies it into a manifest: without the ServiceAccount token
// mount, whose volume the Pod does not carry (the ServiceAccount
// admission plugin adds both again), so the API server's validation lets
// the Pod reach graft and the policy.
func (a *adversary) realContainer(t *testing.T, name string) corev1.Container {
	t.Helper()
	for _, c := range allContainers(a.realPod) {
		if c.Name == name {
			c := *c.DeepCopy()
			c.VolumeMounts = withoutTokenMount(c.VolumeMounts)
			return c
		}
	}
	t.Fatalf("graft's Pod has no container %s", name)
	return corev1.Container{}
}

// attempt creates p in ns and returns the error and, if stored, the Pod.
func attempt(t *testing.T, ns string, p *corev1.Pod) (*corev1.Pod, error) {
	t.Helper()
	return env.client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{})
}

// requireHeld fails unless the create was refused with a message saying
// every one of want, or (when graftsOwn is set) stored holding only
// graft's own render under graft's names, as graftsOwn judges it.
func requireHeld(t *testing.T, what string, stored *corev1.Pod, err error, graftsOwn func(*corev1.Pod) error, want ...string) {
	t.Helper()
	if err != nil {
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: refused, but the message does not say %q: %v", what, w, err)
			}
		}
		t.Logf("%s: refused: %v", what, err)
		return
	}
	if graftsOwn == nil {
		t.Errorf("%s: admitted (%s), want refused saying %q", what, containerNames(stored), want)
		return
	}
	if e := graftsOwn(stored); e != nil {
		t.Errorf("%s: stored without graft's own render: %v", what, e)
	}
}

// sameAs reports whether stored's container name is the real injection's
// in the fields an attack changes.
func (a *adversary) sameAs(name string) func(*corev1.Pod) error {
	return func(p *corev1.Pod) error {
		var got, want *corev1.Container
		for _, c := range allContainers(p) {
			if c.Name == name {
				got = &c
			}
		}
		for _, c := range allContainers(a.realPod) {
			if c.Name == name {
				want = &c
			}
		}
		switch {
		case got == nil || want == nil:
			return fmt.Errorf("container %s missing", name)
		case got.Image != want.Image || strings.Join(got.Command, " ") != strings.Join(want.Command, " ") ||
			fmt.Sprint(got.SecurityContext) != fmt.Sprint(want.SecurityContext) || len(got.Env) != len(want.Env):
			return fmt.Errorf("container %s is not graft's render (image %s, command %v, securityContext %v)", name, got.Image, got.Command, got.SecurityContext)
		}
		return nil
	}
}

func ownSidecar(name, image string) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	root := int64(0)
	return corev1.Container{Name: name, Image: image, RestartPolicy: &always, Command: []string{"/bin/sh", "-c", "sleep 1d"},
		SecurityContext: &corev1.SecurityContext{RunAsUser: &root, Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}}}}
}

// TestAdversaryForgedSidecars: attacks 1 and 2 of issue 32 and their
// variants, through graft and with graft bypassed. Each side refuses in
// its own words, naming the container and what differs: the policy
// (`init container graft-proxy is not graft's: field command is not what
// template mesh-proxy renders`) and graft (`Pod already has init container
// "graft-proxy", which graft did not inject: its command differs`).
func TestAdversaryForgedSidecars(t *testing.T) {
	a := newAdversary(t, "e2e-adv-forged", "mesh-proxy")
	hostPath := corev1.HostPathUnset
	sidecar := a.injectedContainer
	notGrafts := func(container, field string) []string {
		return []string{"init container " + container + " is not graft's", "field " + field + " is not what template mesh-proxy renders"}
	}
	differs := func(container, field string) []string {
		return []string{fmt.Sprintf("init container %q, which graft did not inject", container), "its " + field}
	}
	for _, c := range []struct {
		name              string
		pod               func(name string) *corev1.Pod
		policy, graftSays []string
	}{
		// 1: a name another template renders, which this profile does not
		// inject. Without a record, the policy's first finding is that
		// graft did not inject the Pod at all.
		{"1 another template's sidecar", func(n string) *corev1.Pod {
			p := simplePod(n)
			p.Spec.InitContainers = []corev1.Container{ownSidecar("graft-secrets-agent", "registry.invalid/agent:1")}
			return p
		}, []string{"graft did not inject this Pod"}, []string{`init container "graft-secrets-agent", which graft did not inject`, "template secrets-agent renders that name"}},
		{"1 another template's sidecar, a copied record", func(n string) *corev1.Pod {
			p := a.forged(n)
			p.Spec.InitContainers = []corev1.Container{a.realContainer(t, sidecar), ownSidecar("graft-log-shipper", "registry.invalid/x:1")}
			return p
		}, []string{"graft-log-shipper"}, []string{`init container "graft-log-shipper", which graft did not inject`, "template log-shipper renders that name"}},
		// 2: graft's name and image, someone else's container.
		{"2 graft's name and image, its own command and root", func(n string) *corev1.Pod {
			p := a.forged(n)
			c := ownSidecar(sidecar, a.realContainer(t, sidecar).Image)
			p.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: &hostPath}}}}
			c.VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}
			p.Spec.InitContainers = []corev1.Container{c}
			return p
		}, notGrafts(sidecar, "command"), differs(sidecar, "command")},
		{"2 graft's render but one env var", func(n string) *corev1.Pod {
			p := a.forged(n)
			c := a.realContainer(t, sidecar)
			c.Env = append(c.Env, corev1.EnvVar{Name: "HTTP_PROXY", Value: "http://evil.invalid"})
			p.Spec.InitContainers = []corev1.Container{c}
			return p
		}, notGrafts(sidecar, "env"), differs(sidecar, "env")},
		// Privileged is invalid beside graft's allowPrivilegeEscalation:
		// false (and in this cluster); added capabilities are not.
		{"2 graft's render but NET_ADMIN", func(n string) *corev1.Pod {
			p := a.forged(n)
			c := a.realContainer(t, sidecar)
			c.SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN", "NET_RAW"}
			p.Spec.InitContainers = []corev1.Container{c}
			return p
		}, notGrafts(sidecar, "securityContext"), differs(sidecar, "securityContext")},
		{"2 graft's render but another probe", func(n string) *corev1.Pod {
			p := a.forged(n)
			c := a.realContainer(t, sidecar)
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			p.Spec.InitContainers = []corev1.Container{c}
			return p
		}, notGrafts(sidecar, "readinessProbe"), differs(sidecar, "readinessProbe")},
	} {
		t.Run(c.name, func(t *testing.T) {
			stored, err := attempt(t, a.bypassed, c.pod("bypassed"))
			requireHeld(t, "graft bypassed", stored, err, nil, append([]string{a.policyName}, c.policy...)...)
			stored, err = attempt(t, a.served, c.pod("through-graft"))
			requireHeld(t, "through graft", stored, err, a.sameAs(sidecar), append([]string{a.webhookName}, c.graftSays...)...)
		})
	}
}

// TestAdversaryCollisions: attack 3 of issue 32. A Pod volume under the
// name of graft's volume, mounted by graft's sidecar, is refused by the
// policy; the other collisions under a copied record (an app container on
// the proxy's uid or port, on graft's env names or mount paths) are
// graft's to refuse, the record notwithstanding.
func TestAdversaryCollisions(t *testing.T) {
	a := newAdversary(t, "e2e-adv-collide", "secrets-agent")
	hostPath := corev1.HostPathUnset
	real := a.realPod
	withVolume := func(n string) *corev1.Pod {
		p := a.forged(n)
		p.Spec.InitContainers = real.DeepCopy().Spec.InitContainers
		for _, v := range real.Spec.Volumes {
			if strings.HasPrefix(v.Name, "kube-api-access-") {
				continue
			}
			if v.Name == "graft-secrets" {
				v.VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc", Type: &hostPath}}
			}
			p.Spec.Volumes = append(p.Spec.Volumes, v)
		}
		for i := range p.Spec.InitContainers {
			p.Spec.InitContainers[i].VolumeMounts = withoutTokenMount(p.Spec.InitContainers[i].VolumeMounts)
		}
		return p
	}
	stored, err := attempt(t, a.bypassed, withVolume("volume-bypassed"))
	requireHeld(t, "graft's volume name as a hostPath, graft bypassed", stored, err, nil, "the volume graft-secrets it mounts is not what template secrets-agent renders")
	stored, err = attempt(t, a.served, withVolume("volume-through-graft"))
	requireHeld(t, "graft's volume name as a hostPath, through graft", stored, err, func(p *corev1.Pod) error {
		for _, v := range p.Spec.Volumes {
			if v.Name == "graft-secrets" && v.HostPath != nil {
				return errors.New("graft-secrets is the Pod's hostPath")
			}
		}
		return nil
	}, "graft-secrets")

	// Collisions with an app container under a copied record, which graft
	// checks whatever the record says: the mesh proxy's reserved uid and
	// its health port, an env var otel-agent sets in every app container,
	// and log-shipper's mount path in app containers.
	// The mesh proxy sets env only in its own sidecar, so an app's
	// GRAFT_POD_NAME collides with nothing and is not a case here.
	m := newAdversary(t, "e2e-adv-collide-mesh", "mesh-proxy")
	otel := newAdversary(t, "e2e-adv-collide-otel", "otel-agent")
	logs := newAdversary(t, "e2e-adv-collide-logs", "log-shipper")
	uid := int64(1337)
	for _, c := range []struct {
		name string
		a    *adversary
		edit func(*corev1.Pod)
		want string
	}{
		{"an app on the proxy's uid", m, func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: &uid}
		}, `container "app" runs as uid 1337, which template mesh-proxy reserves for its container "graft-proxy"`},
		{"an app on the proxy's health port", m, func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 15021}}
		}, `container "app" already uses port 15021/TCP, which template mesh-proxy's container "graft-proxy" opens`},
		{"an app setting graft's env names", otel, func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "GRAFT_OTEL_POD_NAME", Value: "evil"}}
		}, `container "app" already sets env var "GRAFT_OTEL_POD_NAME", which template otel-agent sets in every app container`},
		{"an app mounting its own volume at graft's mount path", logs, func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: "/var/log/app"}}
		}, `container "app" already mounts volume "mine" at /var/log/app, where template log-shipper mounts volume "graft-logs"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.a.forged("collide-" + strings.ReplaceAll(strings.ReplaceAll(c.name, " ", "-"), "'", ""))
			p.Spec.InitContainers = []corev1.Container{c.a.realContainer(t, c.a.injectedContainer)}
			for _, v := range c.a.realPod.Spec.Volumes {
				if !strings.HasPrefix(v.Name, "kube-api-access-") {
					p.Spec.Volumes = append(p.Spec.Volumes, v)
				}
			}
			c.edit(p)
			stored, err := attempt(t, c.a.served, p)
			requireHeld(t, "a copied record", stored, err, nil, c.a.webhookName, c.want)
		})
	}
}

func withoutTokenMount(ms []corev1.VolumeMount) []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for _, m := range ms {
		if !strings.HasPrefix(m.Name, "kube-api-access-") {
			out = append(out, m)
		}
	}
	return out
}

// TestAdversaryReservedAnnotations: attack 4 of issue 32. Annotations in
// graft's domains preset by the Pod are refused, or overwritten by graft
// so the stored Pod holds graft's values; the same ends reached through
// the locked parameters are refused by both.
func TestAdversaryReservedAnnotations(t *testing.T) {
	a := newAdversary(t, "e2e-adv-annotations", "mesh-proxy")
	graftsValues := func(p *corev1.Pod) error {
		for k, v := range map[string]string{"redirect.graft.dev/mode": "cni", "redirect.graft.dev/proxy-uid": "1337",
			"redirect.graft.dev/exclude-outbound-ports": ""} {
			if got, ok := p.Annotations[k]; !ok || got != v {
				return fmt.Errorf("annotation %s=%q, graft renders %q", k, got, v)
			}
		}
		return nil
	}
	for i, c := range []struct {
		name  string
		extra map[string]string
		want  string
		// refusedOnly: graft writes no such value, so only a refusal holds.
		refusedOnly bool
	}{
		{"traffic redirection turned off", map[string]string{"redirect.graft.dev/mode": "none"}, "redirect.graft.dev/mode", false},
		{"another proxy uid", map[string]string{"redirect.graft.dev/proxy-uid": "0"}, "redirect.graft.dev/proxy-uid", false},
		{"outbound ports excluded", map[string]string{"redirect.graft.dev/exclude-outbound-ports": "1-65535"}, "redirect.graft.dev/exclude-outbound-ports", false},
		{"a key of graft's domain graft never writes", map[string]string{"redirect.graft.dev/bypass": "true"}, "redirect.graft.dev/bypass", true},
		// The same ends through the template's parameters, which the
		// shipped profiles lock (inject.BuiltinLocks).
		{"traffic redirection turned off by parameter", map[string]string{"graft.dev/mesh-proxy.trafficRedirect": "none"}, "parameter trafficRedirect of template mesh-proxy is locked", true},
		{"outbound ports excluded by parameter", map[string]string{"graft.dev/mesh-proxy.excludeOutboundPorts": "80,443"}, "parameter excludeOutboundPorts of template mesh-proxy is locked", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := simplePod(fmt.Sprintf("annotated-%d", i))
			p.Annotations = c.extra
			stored, err := attempt(t, a.served, p)
			own := graftsValues
			if c.refusedOnly {
				own = nil
			}
			requireHeld(t, "through graft", stored, err, own, c.want)
			p = a.forged(fmt.Sprintf("annotated-bypassed-%d", i))
			p.Spec.InitContainers = []corev1.Container{a.realContainer(t, a.injectedContainer)}
			for k, v := range a.realPod.Annotations {
				p.Annotations[k] = v
			}
			for k, v := range c.extra {
				p.Annotations[k] = v
			}
			stored, err = attempt(t, a.bypassed, p)
			requireHeld(t, "graft bypassed", stored, err, nil, a.policyName, c.want)
		})
	}
}

// TestAdversaryBogusRecordFailOpen: attack 5 of issue 32. graft fails open
// (its webhook answers nothing; failurePolicy Ignore) and the Pod carries
// a record claiming nothing: refused.
func TestAdversaryBogusRecordFailOpen(t *testing.T) {
	ns := newNamespace(t, "e2e-adv-failopen", map[string]string{names.Inject: "e2e-adversary"})
	probe := newNamespace(t, "e2e-adv-failopen-probe", nil)
	dead := scopedGraftWebhook("dead.adversary.e2e.graft.dev", ns, "/inject/mesh-proxy")
	url := "https://127.0.0.1:1/inject/mesh-proxy" // nothing listens: the call fails
	dead.ClientConfig.URL = &url
	ignore := regv1.Ignore
	dead.FailurePolicy = &ignore
	registerWebhooks(t, "graft-e2e-adv-failopen", dead)
	policy := bindShippedGuarantee(t, "mesh-proxy", ns, probe)
	for _, record := range []string{"x", "{}", `{"version":2}`, `{"version":2,"injected":["graft-proxy"]}`} {
		p := simplePod("bogus")
		p.Annotations = map[string]string{names.Status: record}
		stored, err := attempt(t, ns, p)
		requireHeld(t, "record "+record, stored, err, nil, policy, "graft.dev/status records no template mesh-proxy")
	}
}

// TestAdversaryAfterAdmission: attacks 6 and 7 of issue 32: graft's image
// swapped by an UPDATE; a mutating webhook after graft (with either
// reinvocation policy, and one ordered before graft) changing graft's
// sidecar; an ephemeral container under a sidecar's name.
func TestAdversaryAfterAdmission(t *testing.T) {
	a := newAdversary(t, "e2e-adv-after", "mesh-proxy")
	pods := env.client.CoreV1().Pods(a.served)
	// 6: an UPDATE replacing the sidecar's image.
	var patchIdx int
	for i, c := range a.realPod.Spec.InitContainers {
		if c.Name == a.injectedContainer {
			patchIdx = i
		}
	}
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/initContainers/%d/image","value":"registry.invalid/evil:1"}]`, patchIdx)
	_, err := pods.Patch(t.Context(), a.realPod.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	requireHeld(t, "6: UPDATE swapping graft's image", nil, err, nil, a.policyName, a.injectedContainer, "field image")
	// An UPDATE that leaves graft's containers alone passes.
	if _, err := pods.Patch(t.Context(), a.realPod.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"web"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("a label edit refused: %v", err)
	}
	// An ephemeral container under a sidecar's name.
	// The node updates the Pod's status meanwhile: each attempt reads the
	// Pod afresh, as kubectl debug does.
	addEphemeral := func(name string) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got := getPod(t, a.served, a.realPod.Name)
			got.Spec.EphemeralContainers = append(got.Spec.EphemeralContainers, corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1"}})
			_, err := pods.UpdateEphemeralContainers(t.Context(), got.Name, got, metav1.UpdateOptions{})
			return err
		})
	}
	err = addEphemeral("graft-secrets-agent")
	requireHeld(t, "an ephemeral container under a sidecar's name", nil, err, nil, "ephemeral container graft-secrets-agent takes the name of a sidecar")
	if err := addEphemeral("debugger"); err != nil {
		t.Errorf("an ephemeral container of the Pod's own name refused: %v", err)
	}

	// 7: a mutating webhook setting graft's sidecar's command and
	// securityContext: after graft (IfNeeded, Never) and before it.
	root := int64(0)
	edit := func(p *corev1.Pod) []patchOp {
		for i, c := range p.Spec.InitContainers {
			if c.Name == a.injectedContainer && len(c.Command) == 0 {
				base := fmt.Sprintf("/spec/initContainers/%d", i)
				return []patchOp{{"add", base + "/command", []string{"/bin/sh", "-c", "sleep 1d"}},
					{"add", base + "/securityContext", &corev1.SecurityContext{RunAsUser: &root,
						Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}}}
			}
		}
		return nil
	}
	for _, c := range []struct {
		name, config string
		reinvocation regv1.ReinvocationPolicyType
	}{
		{"after graft, IfNeeded", "zz", regv1.IfNeededReinvocationPolicy},
		{"after graft, Never", "zz", regv1.NeverReinvocationPolicy},
		{"before graft, IfNeeded", "aa", regv1.IfNeededReinvocationPolicy},
	} {
		t.Run("7 "+c.name, func(t *testing.T) {
			b := newAdversary(t, "e2e-adv-mutator-"+strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(c.name, ",", ""), " ", "-")), "mesh-proxy")
			m := &foreignMutator{patch: edit}
			registerMutator(t, c.config+"-e2e-adv-mutator-"+b.served, b.served, m, c.reinvocation)
			waitFor(t, "the mutator to take effect", func(ctx context.Context) error {
				_, _ = env.client.CoreV1().Pods(b.served).Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if m.calls.Load() == 0 {
					return errors.New("not called yet")
				}
				return nil
			})
			stored, err := attempt(t, b.served, simplePod("mutated"))
			requireHeld(t, c.name, stored, err, b.sameAs(b.injectedContainer), b.injectedContainer)
		})
	}
}

// registerMutator is registerForeign with the configuration's name given:
// the API server calls configurations in name order.
func registerMutator(t *testing.T, name, ns string, m *foreignMutator, reinvocation regv1.ReinvocationPolicyType) {
	t.Helper()
	registerForeignNamed(t, name, ns, m, reinvocation)
}

// TestAdversaryOtherTemplatesAndVersions: the forged-sidecar attack on
// another template (the secrets agent's plain init container) and with
// graft reached through admission.k8s.io/v1beta1.
func TestAdversaryOtherTemplatesAndVersions(t *testing.T) {
	for _, c := range []struct {
		prefix, profile string
		versions        []string
	}{
		{"e2e-adv-secrets", "secrets-agent", nil},
		{"e2e-adv-v1beta1", "mesh-proxy", []string{"v1beta1"}},
	} {
		t.Run(c.prefix, func(t *testing.T) {
			a := newAdversary(t, c.prefix, c.profile, c.versions...)
			for _, cont := range allContainers(a.realPod) {
				if !strings.HasPrefix(cont.Name, "graft-") {
					continue
				}
				p := a.forged("forged-" + cont.Name)
				p.Spec.InitContainers = nil
				for _, real := range a.realPod.Spec.InitContainers {
					real.VolumeMounts = withoutTokenMount(real.VolumeMounts)
					if real.Name == cont.Name {
						real.Args = append(real.Args, "--evil")
					}
					p.Spec.InitContainers = append(p.Spec.InitContainers, real)
				}
				for _, v := range a.realPod.Spec.Volumes {
					if !strings.HasPrefix(v.Name, "kube-api-access-") {
						p.Spec.Volumes = append(p.Spec.Volumes, v)
					}
				}
				stored, err := attempt(t, a.bypassed, p)
				requireHeld(t, cont.Name+", graft bypassed", stored, err, nil, cont.Name, "field args")
				stored, err = attempt(t, a.served, p)
				requireHeld(t, cont.Name+", through graft", stored, err, a.sameAs(cont.Name), cont.Name)
			}
		})
	}
}

// unlockedGuarantee is the guarantee graft's compiler (the one that writes
// deploy/base's) gives the suite's profile e2e-<template>, which injects
// template alone and locks nothing: a policy that admits every value of
// every parameter the template declares.
func unlockedGuarantee(t *testing.T, template string) (*regv1.ValidatingAdmissionPolicy, *regv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	suite, err := suiteConfig()
	if err != nil {
		t.Fatal(err)
	}
	profile := templateProfile(template)
	cfg := suite
	cfg.DefaultProfile = profile
	cfg.Profiles = map[string]inject.Profile{profile: suite.Profiles[profile]}
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	gs, err := registration.Guarantees(inject.RevisionsConfig{Revisions: []inject.RevisionConfig{{Config: cfg, Templates: set}}}, registration.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The binding of the policy's own name, as shippedPolicy takes it (the
	// other, .labelled, serves namespaces naming a revision).
	name := registration.PolicyName("graft", profile)
	for _, g := range gs {
		if g.Profile != profile || g.Policy.Name != name {
			continue
		}
		for _, b := range g.Bindings {
			if b.Name == name {
				return g.Policy, b
			}
		}
	}
	t.Fatalf("no guarantee for profile %s among %d", profile, len(gs))
	return nil, nil
}

// TestGuaranteeDefaultsAsTheAPIServer: for each built-in template, Pods
// graft injects with the values that select each variant of the template,
// as the API server stores them (a dry run: defaulted, the ServiceAccount
// token mounted), are admitted by the template's guarantee in the API
// server, and the guarantee's matchCondition alone passes those without
// parameter annotations, run on the stored object in-process: the
// defaults graft mirrors (export/apidefaults.go) are the API server's.
// The profiles are the suite's e2e-<template>, which lock nothing, so the
// variants may set what the shipped profiles lock (trafficRedirect,
// excludeInboundPorts, tls): those render fields no unlocked value does.
func TestGuaranteeDefaultsAsTheAPIServer(t *testing.T) {
	variants := map[string][]map[string]string{
		"mesh-proxy":  {nil, {"graft.dev/mesh-proxy.holdApplicationUntilProxyStarts": "false"}, {"graft.dev/mesh-proxy.trafficRedirect": "none", "graft.dev/mesh-proxy.excludeInboundPorts": "8080,9090"}},
		"otel-agent":  {nil, {"graft.dev/otel-agent.serviceNameFrom": "podName", "graft.dev/otel-agent.tls": "true"}},
		"log-shipper": {nil, {"graft.dev/log-shipper.volumeSizeLimit": "2048Mi"}},
		"secrets-agent": {nil, {"graft.dev/secrets-agent.templateFormat": "env", "graft.dev/secrets-agent.secretPaths": "secret/a, secret/b"},
			{"graft.dev/secrets-agent.templateFormat": "yaml"}},
	}
	for template, vs := range variants {
		t.Run(template, func(t *testing.T) {
			profile := templateProfile(template)
			labels := map[string]string{names.Inject: profile}
			ns := newNamespace(t, "e2e-defaults-"+template, labels)
			probe := newNamespace(t, "e2e-defaults-"+template+"-probe", nil)
			registerWebhooks(t, "graft-e2e-defaults-"+template, scopedGraftWebhook(template+".defaults.e2e.graft.dev", ns, "/inject/"+profile))
			policy, binding := unlockedGuarantee(t, template)
			name := bindGuaranteeCopy(t, policy.DeepCopy(), binding.DeepCopy(), ns, probe)
			compiled, err := vapeval.Compile(policy)
			if err != nil {
				t.Fatal(err)
			}
			if err := compiled.Bind(binding); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "graft to inject in "+ns, func(ctx context.Context) error {
				p, err := env.client.CoreV1().Pods(ns).Create(ctx, simplePod("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if err != nil {
					return err
				}
				if !isInjected(p) {
					return errors.New("not injected yet")
				}
				return nil
			})
			for i, a := range vs {
				p := simplePod(fmt.Sprintf("v%d", i))
				p.Annotations = a
				stored, err := env.client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if err != nil {
					t.Errorf("%v: refused by %s: %v", a, name, err)
					continue
				}
				if !isInjected(stored) {
					t.Errorf("%v: not injected", a)
					continue
				}
				v, err := compiled.Admit(vapeval.Request{Object: stored, Namespace: vapeval.NamespaceOf(ns, labels)})
				switch {
				case err != nil:
					t.Errorf("%v: %v", a, err)
				case v.Denied != "":
					t.Errorf("%v: the stored Pod refused in-process: %s", a, v.Denied)
				case a == nil && v.Matched:
					t.Errorf("the stored Pod misses the matchCondition's shortcut: a default of the API server's is not mirrored")
				}
			}
		})
	}
}
