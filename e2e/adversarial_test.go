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

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/vapeval"
)

// Issue 32: graft's guarantee holds against Pod authors. Each case is
// tried as a hostile Pod author would, through kube-apiserver with the
// shipped guarantee of the profile bound to the test's namespaces and
// graft's webhook reached as deploy/ ships it (or bypassed, as when it
// fails open): every one ends refused with graft's or the policy's message,
// or with graft's own container in the stored Pod, never with the Pod's.
//
// The policy side of every case holds on this branch. Cases marked
// "engine" also need the webhook to compare content (GUARANTEE-SPEC: what
// the webhook does), which branch g-engine brings: until it merges, graft
// keeps the Pod's forged container under a copied record, and those cases
// are still refused, by the policy; the ones asserting graft's own refusal
// or overwrite (collisions under a copied record) fail until then.

// adversary is a namespace whose Pods graft injects with one profile, by a
// copy of the shipped webhook (path /inject/<profile>), and the shipped
// guarantee of that profile bound to it; bypassed is a namespace with the
// same guarantee and no webhook, as if graft failed open.
type adversary struct {
	profile           string
	served, bypassed  string
	webhookName       string
	reinvocation      regv1.ReinvocationPolicyType
	reviewVersions    []string
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

// realContainer is the real injection's container called name.
func (a *adversary) realContainer(t *testing.T, name string) corev1.Container {
	t.Helper()
	for _, c := range allContainers(a.realPod) {
		if c.Name == name {
			return *c.DeepCopy()
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
// variants, through graft and with graft bypassed.
func TestAdversaryForgedSidecars(t *testing.T) {
	a := newAdversary(t, "e2e-adv-forged", "mesh-proxy")
	hostPath := corev1.HostPathUnset
	for _, c := range []struct {
		name string
		pod  func(name string) *corev1.Pod
		want []string
	}{
		// 1: a name another template renders, which this profile does not inject.
		{"1 another template's sidecar", func(n string) *corev1.Pod {
			p := simplePod(n)
			p.Spec.InitContainers = []corev1.Container{ownSidecar("graft-secrets-agent", "registry.invalid/agent:1")}
			return p
		}, []string{"graft-secrets-agent"}},
		{"1 another template's sidecar, a copied record", func(n string) *corev1.Pod {
			p := a.forged(n)
			p.Spec.InitContainers = []corev1.Container{a.realContainer(t, a.injectedContainer), ownSidecar("graft-log-shipper", "registry.invalid/x:1")}
			return p
		}, []string{"graft-log-shipper"}},
		// 2: graft's name and image, someone else's container.
		{"2 graft's name and image, its own command and root", func(n string) *corev1.Pod {
			p := a.forged(n)
			c := ownSidecar(a.injectedContainer, a.realContainer(t, a.injectedContainer).Image)
			p.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: &hostPath}}}}
			c.VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}
			p.Spec.InitContainers = []corev1.Container{c}
			return p
		}, []string{a.injectedContainer, "is not graft's"}},
		{"2 graft's render but one env var", func(n string) *corev1.Pod {
			p := a.forged(n)
			c := a.realContainer(t, a.injectedContainer)
			c.Env = append(c.Env, corev1.EnvVar{Name: "HTTP_PROXY", Value: "http://evil.invalid"})
			p.Spec.InitContainers = []corev1.Container{c}
			return p
		}, []string{a.injectedContainer, "field env"}},
		{"2 graft's render but privileged", func(n string) *corev1.Pod {
			p := a.forged(n)
			c := a.realContainer(t, a.injectedContainer)
			privileged := true
			c.SecurityContext.Privileged = &privileged
			p.Spec.InitContainers = []corev1.Container{c}
			return p
		}, []string{a.injectedContainer, "field securityContext"}},
		{"2 graft's render but another probe", func(n string) *corev1.Pod {
			p := a.forged(n)
			c := a.realContainer(t, a.injectedContainer)
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			p.Spec.InitContainers = []corev1.Container{c}
			return p
		}, []string{a.injectedContainer, "field readinessProbe"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stored, err := attempt(t, a.bypassed, c.pod("bypassed"))
			requireHeld(t, "graft bypassed", stored, err, nil, append([]string{a.policyName}, c.want...)...)
			stored, err = attempt(t, a.served, c.pod("through-graft"))
			requireHeld(t, "through graft", stored, err, a.sameAs(a.injectedContainer), c.want...)
		})
	}
}

// TestAdversaryCollisions: attack 3 of issue 32. A Pod volume under the
// name of graft's volume, mounted by graft's sidecar, is refused by the
// policy; the other collisions under a copied record (an app container on
// the proxy's uid, port, env names or mount paths) are graft's to refuse:
// engine (they fail until branch g-engine merges).
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

	// engine: collisions with an app container under a copied record.
	m := newAdversary(t, "e2e-adv-collide-mesh", "mesh-proxy")
	uid := int64(1337)
	for _, c := range []struct {
		name string
		edit func(*corev1.Container)
	}{
		{"an app on the proxy's uid", func(c *corev1.Container) { c.SecurityContext = &corev1.SecurityContext{RunAsUser: &uid} }},
		{"an app on the proxy's health port", func(c *corev1.Container) { c.Ports = []corev1.ContainerPort{{ContainerPort: 15021}} }},
		{"an app setting graft's env names", func(c *corev1.Container) {
			c.Env = []corev1.EnvVar{{Name: "GRAFT_POD_NAME", Value: "spoofed"}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := m.forged("collide")
			p.Spec.InitContainers = []corev1.Container{m.realContainer(t, m.injectedContainer)}
			p.Spec.InitContainers[0].VolumeMounts = withoutTokenMount(p.Spec.InitContainers[0].VolumeMounts)
			c.edit(&p.Spec.Containers[0])
			_, err := attempt(t, m.served, p)
			if err == nil {
				t.Errorf("admitted: graft must refuse the collision whatever the record says (engine: branch g-engine)")
				return
			}
			t.Logf("refused: %v", err)
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
// (engine) so the stored Pod holds graft's values.
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
	for _, c := range []struct {
		name  string
		extra map[string]string
		want  string
	}{
		{"traffic redirection turned off", map[string]string{"redirect.graft.dev/mode": "none"}, "redirect.graft.dev/mode"},
		{"another proxy uid", map[string]string{"redirect.graft.dev/proxy-uid": "0"}, "redirect.graft.dev/proxy-uid"},
		{"outbound ports excluded", map[string]string{"redirect.graft.dev/exclude-outbound-ports": "1-65535"}, "redirect.graft.dev/exclude-outbound-ports"},
		{"a key of graft's domain graft never writes", map[string]string{"redirect.graft.dev/bypass": "true"}, "redirect.graft.dev/bypass"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := simplePod("annotated")
			p.Annotations = c.extra
			stored, err := attempt(t, a.served, p)
			own := graftsValues
			if _, renders := map[string]bool{"redirect.graft.dev/bypass": true}[c.want]; renders {
				own = nil // graft writes no such key: only a refusal holds
			}
			requireHeld(t, "through graft", stored, err, own, c.want)
			p = a.forged("annotated-bypassed")
			p.Spec.InitContainers = []corev1.Container{a.realContainer(t, a.injectedContainer)}
			p.Spec.InitContainers[0].VolumeMounts = withoutTokenMount(p.Spec.InitContainers[0].VolumeMounts)
			for k, v := range a.realPod.Annotations {
				p.Annotations[k] = v
			}
			for k, v := range c.extra {
				p.Annotations[k] = v
			}
			stored, err = attempt(t, a.bypassed, p)
			requireHeld(t, "graft bypassed", stored, err, nil, c.want)
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
	got := getPod(t, a.served, a.realPod.Name)
	got.Spec.EphemeralContainers = append(got.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "graft-secrets-agent", Image: "busybox:1"}})
	_, err = pods.UpdateEphemeralContainers(t.Context(), got.Name, got, metav1.UpdateOptions{})
	requireHeld(t, "an ephemeral container under a sidecar's name", nil, err, nil, "ephemeral container graft-secrets-agent takes the name of a sidecar")
	got = getPod(t, a.served, a.realPod.Name)
	got.Spec.EphemeralContainers = append(got.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1"}})
	if _, err := pods.UpdateEphemeralContainers(t.Context(), got.Name, got, metav1.UpdateOptions{}); err != nil {
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

// TestGuaranteeDefaultsAsTheAPIServer: for each shipped profile injecting
// one built-in template, Pods graft injects with the values that select
// each variant of the template, as the API server stores them (a dry run:
// defaulted, the ServiceAccount token mounted), are admitted by the
// profile's shipped guarantee in the API server, and the guarantee's
// matchCondition alone passes those without parameter annotations, run on
// the stored object in-process: the defaults graft mirrors
// (export/apidefaults.go) are the API server's.
func TestGuaranteeDefaultsAsTheAPIServer(t *testing.T) {
	variants := map[string][]map[string]string{
		"agent":       {nil, {"graft.dev/agent.debug": "true", "graft.dev/agent.logLevel": "debug"}},
		"mesh-proxy":  {nil, {"graft.dev/mesh-proxy.holdApplicationUntilProxyStarts": "false"}, {"graft.dev/mesh-proxy.trafficRedirect": "none", "graft.dev/mesh-proxy.excludeInboundPorts": "8080,9090"}},
		"otel-agent":  {nil, {"graft.dev/otel-agent.serviceNameFrom": "podName", "graft.dev/otel-agent.tls": "true"}},
		"log-shipper": {nil, {"graft.dev/log-shipper.volumeSizeLimit": "2048Mi"}},
		"secrets-agent": {nil, {"graft.dev/secrets-agent.templateFormat": "env", "graft.dev/secrets-agent.secretPaths": "secret/a, secret/b"},
			{"graft.dev/secrets-agent.templateFormat": "yaml"}},
	}
	for profile, vs := range variants {
		t.Run(profile, func(t *testing.T) {
			ns := newNamespace(t, "e2e-defaults-"+profile, map[string]string{names.Inject: profile})
			probe := newNamespace(t, "e2e-defaults-"+profile+"-probe", nil)
			name := bindShippedGuarantee(t, profile, ns, probe)
			policy, binding := shippedGuarantee(t, profile)
			compiled, err := vapeval.Compile(policy)
			if err != nil {
				t.Fatal(err)
			}
			if err := compiled.Bind(binding); err != nil {
				t.Fatal(err)
			}
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
				v, err := compiled.Admit(vapeval.Request{Object: stored, Namespace: vapeval.NamespaceOf(ns, map[string]string{names.Inject: profile})})
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
