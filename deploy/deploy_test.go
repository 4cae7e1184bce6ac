package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/graftdev/graft/internal/registration"
	"github.com/graftdev/graft/webhook/certgen"
)

const (
	namespace   = "graft-system"
	injectLabel = "graft.dev/inject"
	revLabel    = "graft.dev/rev"
)

var systemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease", namespace}

// variant is one installable build and what must differ between them.
type variant struct {
	name          string
	dir           func(t *testing.T) string
	replicas      int32
	minAvailable  int
	failurePolicy admissionv1.FailurePolicyType
	certManager   bool // cert-manager injects the CA
	selfSigned    bool // caBundle from graft certs
}

func variants() []variant {
	here := func(dir string) func(*testing.T) string { return func(*testing.T) string { return dir } }
	return []variant{
		{name: "base", dir: here("base"), replicas: 2, minAvailable: 1, failurePolicy: admissionv1.Ignore},
		{name: "cert-manager", dir: here("overlays/cert-manager"), replicas: 2, minAvailable: 1, failurePolicy: admissionv1.Ignore, certManager: true},
		{name: "self-signed", dir: func(t *testing.T) string {
			root, _ := selfSignedTree(t)
			return filepath.Join(root, "overlays", "self-signed")
		}, replicas: 2, minAvailable: 1, failurePolicy: admissionv1.Ignore, selfSigned: true},
		{name: "ha", dir: here("overlays/ha"), replicas: 3, minAvailable: 2, failurePolicy: admissionv1.Fail, certManager: true},
	}
}

func TestEveryOverlayBuilds(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			out := kustomize(t, v.dir(t))
			want := []string{"Namespace", "ResourceQuota", "ServiceAccount", "ConfigMap", "Service", "Deployment",
				"PodDisruptionBudget", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
			if v.certManager {
				want = append(want, "Issuer", "Certificate")
			}
			if v.selfSigned {
				want = append(want, "Secret")
			}
			for _, kind := range want {
				if len(out.find(kind)) == 0 {
					t.Errorf("no %s in the output", kind)
				}
			}
			for _, obj := range out {
				// kustomize-only inputs must not reach the cluster.
				if bytes.Contains(obj.yaml, []byte("config.kubernetes.io/local-config")) {
					t.Errorf("%s %s: a local-config object in the output", obj.kind, obj.name)
				}
				if obj.kind == "ConfigMap" && (obj.name == certgen.CABundleName || obj.name == "graft-ha-settings") {
					t.Errorf("ConfigMap %s leaked into the output", obj.name)
				}
				// Everything namespaced lives in graft's namespace.
				if obj.namespace != "" && obj.namespace != namespace {
					t.Errorf("%s %s in namespace %q", obj.kind, obj.name, obj.namespace)
				}
			}
		})
	}
}

func TestSelfSignedOverlayNeedsCerts(t *testing.T) {
	// Without `graft certs --kustomize` first the build must fail, not
	// produce webhooks without a CA.
	root := copyTree(t)
	if err := os.RemoveAll(filepath.Join(root, "overlays", "self-signed", "certs")); err != nil {
		t.Fatal(err)
	}
	_, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "overlays", "self-signed"))
	if err == nil || !strings.Contains(err.Error(), "certs/") {
		t.Fatalf("build without certs/: err = %v, want one naming certs/", err)
	}
}

func TestWebhooks(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			dir := v.dir(t)
			out := kustomize(t, dir)
			mwc := one[admissionv1.MutatingWebhookConfiguration](t, out, "MutatingWebhookConfiguration", "graft")
			if len(mwc.Webhooks) < 2 {
				t.Fatalf("%d webhooks, want one per profile", len(mwc.Webhooks))
			}
			names := map[string]bool{}
			for _, w := range mwc.Webhooks {
				if names[w.Name] {
					t.Errorf("webhook name %s used twice", w.Name)
				}
				names[w.Name] = true
				checkWebhook(t, w, v)
			}
			ann := mwc.Annotations["cert-manager.io/inject-ca-from"]
			switch {
			case v.certManager && ann != namespace+"/graft-serving":
				t.Errorf("inject-ca-from = %q, want %s/graft-serving", ann, namespace)
			case !v.certManager && ann != "":
				t.Errorf("inject-ca-from = %q on a build without cert-manager", ann)
			}
		})
	}
}

func checkWebhook(t *testing.T, w admissionv1.MutatingWebhook, v variant) {
	t.Helper()
	profile, rev, ok := webhookRoute(w.Name)
	if !ok {
		t.Errorf("webhook %q: want <profile>.inject.graft.dev or <profile>.<rev>.rev.inject.graft.dev", w.Name)
	}
	svc := w.ClientConfig.Service
	if svc == nil || svc.Name != "graft" || svc.Namespace != namespace || svc.Port == nil || *svc.Port != 443 || svc.Path == nil {
		t.Fatalf("%s: clientConfig.service = %+v, want graft.%s:443 with a path", w.Name, svc, namespace)
	}
	wantPath := "/inject/" + profile
	switch {
	case rev != "":
		wantPath += "/" + rev
	case profile == "enabled":
		wantPath = "/inject"
	}
	if *svc.Path != wantPath {
		t.Errorf("%s: path %s, want %s", w.Name, *svc.Path, wantPath)
	}
	if w.ClientConfig.URL != nil {
		t.Errorf("%s: a url as well as a service", w.Name)
	}

	// Namespaces: the profile's label value, the revision's (or none),
	// never the system ones.
	if got := exprValues(w.NamespaceSelector, injectLabel, metav1.LabelSelectorOpIn); !slices.Equal(got, []string{profile}) {
		t.Errorf("%s: namespaceSelector %s In %v, want [%s]", w.Name, injectLabel, got, profile)
	}
	if rev == "" && !slices.ContainsFunc(w.NamespaceSelector.MatchExpressions, func(e metav1.LabelSelectorRequirement) bool {
		return e.Key == revLabel && e.Operator == metav1.LabelSelectorOpDoesNotExist
	}) {
		t.Errorf("%s: namespaceSelector does not require the absence of %s", w.Name, revLabel)
	}
	if got := exprValues(w.NamespaceSelector, revLabel, metav1.LabelSelectorOpIn); rev != "" && !slices.Equal(got, []string{rev}) {
		t.Errorf("%s: namespaceSelector %s In %v, want [%s]", w.Name, revLabel, got, rev)
	}
	if got := exprValues(w.NamespaceSelector, "kubernetes.io/metadata.name", metav1.LabelSelectorOpNotIn); !sameSet(got, systemNamespaces) {
		t.Errorf("%s: excluded namespaces %v, want %v", w.Name, got, systemNamespaces)
	}
	if len(w.NamespaceSelector.MatchLabels) != 0 || len(w.NamespaceSelector.MatchExpressions) != 3 {
		t.Errorf("%s: namespaceSelector has more than the labels and the exclusions: %+v", w.Name, w.NamespaceSelector)
	}
	// Pods opt out with graft.dev/inject: "false".
	if got := exprValues(w.ObjectSelector, injectLabel, metav1.LabelSelectorOpNotIn); !slices.Equal(got, []string{"false"}) {
		t.Errorf("%s: objectSelector %s NotIn %v, want [false]", w.Name, injectLabel, got)
	}

	// Every Pod is sent: a CEL condition costs the API server a conversion
	// of the Pod, more than graft takes to skip one.
	if len(w.MatchConditions) != 0 {
		t.Errorf("%s: matchConditions %+v, want none", w.Name, w.MatchConditions)
	}

	if len(w.Rules) != 1 {
		t.Fatalf("%s: %d rules, want 1", w.Name, len(w.Rules))
	}
	r := w.Rules[0]
	if !slices.Equal(r.Operations, []admissionv1.OperationType{admissionv1.Create}) ||
		!slices.Equal(r.APIGroups, []string{""}) || !slices.Equal(r.APIVersions, []string{"v1"}) ||
		!slices.Equal(r.Resources, []string{"pods"}) {
		t.Errorf("%s: rule %+v, want CREATE of v1 pods only", w.Name, r)
	}
	check := func(field string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %s = %v, want %v", w.Name, field, got, want)
		}
	}
	check("matchPolicy", deref(w.MatchPolicy), admissionv1.Equivalent)
	check("sideEffects", deref(w.SideEffects), admissionv1.SideEffectClassNone)
	check("reinvocationPolicy", deref(w.ReinvocationPolicy), admissionv1.IfNeededReinvocationPolicy)
	check("failurePolicy", deref(w.FailurePolicy), v.failurePolicy)
	if !slices.Equal(w.AdmissionReviewVersions, []string{"v1", "v1beta1"}) {
		t.Errorf("%s: admissionReviewVersions %v, want [v1 v1beta1]", w.Name, w.AdmissionReviewVersions)
	}
	if w.TimeoutSeconds == nil || *w.TimeoutSeconds < 1 || *w.TimeoutSeconds > 10 {
		t.Errorf("%s: timeoutSeconds %v, want set, 1 to 10", w.Name, w.TimeoutSeconds)
	}

	ca := w.ClientConfig.CABundle
	switch {
	case v.selfSigned:
		if _, err := parseCA(ca); err != nil {
			t.Errorf("%s: caBundle: %v", w.Name, err)
		}
	case len(ca) != 0:
		t.Errorf("%s: a caBundle in a build that does not set one", w.Name)
	}
}

func TestDeployment(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			out := kustomize(t, v.dir(t))
			d := one[appsv1.Deployment](t, out, "Deployment", "graft")
			if d.Spec.Replicas == nil || *d.Spec.Replicas != v.replicas {
				t.Errorf("replicas %v, want %d", d.Spec.Replicas, v.replicas)
			}
			if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
				t.Errorf("rolling update may take replicas away: %+v", ru)
			}
			ps := d.Spec.Template.Spec
			if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
				t.Error("a service account token is mounted; graft does not call the API")
			}
			if ps.PriorityClassName != "system-cluster-critical" {
				t.Errorf("priorityClassName %q", ps.PriorityClassName)
			}
			if len(ps.TopologySpreadConstraints) == 0 || ps.TopologySpreadConstraints[0].TopologyKey != "kubernetes.io/hostname" {
				t.Errorf("replicas not spread across nodes: %+v", ps.TopologySpreadConstraints)
			}
			psc := ps.SecurityContext
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil ||
				psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || deref(psc.RunAsUser) != 65532 {
				t.Errorf("pod securityContext %+v: want runAsNonRoot, uid 65532, seccomp RuntimeDefault", psc)
			}
			if len(ps.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(ps.Containers))
			}
			c := ps.Containers[0]
			sc := c.SecurityContext
			if sc == nil || deref(sc.AllowPrivilegeEscalation) || !deref(sc.ReadOnlyRootFilesystem) || deref(sc.Privileged) ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
				t.Errorf("container securityContext %+v: want no escalation, read-only root, drop ALL", sc)
			}
			if !strings.HasPrefix(c.Image, "ghcr.io/graftdev/graft:") {
				t.Errorf("image %q not set by the kustomization", c.Image)
			}
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := c.Resources.Requests[res]; !ok {
					t.Errorf("no %s request", res)
				}
				if _, ok := c.Resources.Limits[res]; !ok {
					t.Errorf("no %s limit", res)
				}
			}

			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			if ports["https"] != 8443 || ports["admin"] != 8080 {
				t.Errorf("container ports %v, want https 8443 and admin 8080", ports)
			}
			for _, p := range []struct {
				name  string
				probe *corev1.Probe
				path  string
			}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}, {"startup", c.StartupProbe, "/healthz"}} {
				if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "admin" {
					t.Errorf("%s probe %+v: want GET %s on the admin port", p.name, p.probe, p.path)
				}
			}

			// Shutdown: graft drains by itself, so no preStop hook delays
			// its SIGTERM; its drain delay, then its grace for requests in
			// flight, then a margin for the exit must end before the
			// kubelet's SIGKILL; and a container restarted in place (its
			// Pod not deleted) leaves the endpoints through the readiness
			// probe within half the drain delay.
			if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
				t.Errorf("preStop hook %+v: graft drains on SIGTERM by itself", c.Lifecycle.PreStop)
			}
			drainDelay, grace := shutdownSettings(t, c.Args)
			const exitMargin = 3 * time.Second
			if g := time.Duration(deref(ps.TerminationGracePeriodSeconds)) * time.Second; g < drainDelay+grace+exitMargin {
				t.Errorf("terminationGracePeriodSeconds %s < drain delay %s + shutdown grace %s + %s", g, drainDelay, grace, exitMargin)
			}
			if rp := c.ReadinessProbe; rp != nil {
				detect := time.Duration(rp.PeriodSeconds*rp.FailureThreshold) * time.Second
				if detect > drainDelay/2 {
					t.Errorf("readiness probe notices a drain after up to %s (period x failureThreshold), more than half the drain delay %s", detect, drainDelay)
				}
			}

			checkMounts(t, out, ps, c)

			pdb := one[policyv1.PodDisruptionBudget](t, out, "PodDisruptionBudget", "graft")
			if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != v.minAvailable {
				t.Errorf("PDB minAvailable %v, want %d", pdb.Spec.MinAvailable, v.minAvailable)
			}
			if int32(v.minAvailable) >= v.replicas {
				t.Errorf("PDB minAvailable %d leaves no replica evictable out of %d", v.minAvailable, v.replicas)
			}
			if !selects(pdb.Spec.Selector, d.Spec.Template.Labels) || !selects(d.Spec.Selector, d.Spec.Template.Labels) {
				t.Error("the PDB or Deployment selector does not select graft's Pods")
			}

			svc := one[corev1.Service](t, out, "Service", "graft")
			if !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, d.Spec.Template.Labels) {
				t.Error("the Service does not select graft's Pods")
			}
			var https *corev1.ServicePort
			for i := range svc.Spec.Ports {
				if svc.Spec.Ports[i].Port == 443 {
					https = &svc.Spec.Ports[i]
				}
			}
			if https == nil || (https.TargetPort.String() != "https" && https.TargetPort.IntValue() != 8443) {
				t.Errorf("Service port 443 does not reach 8443: %+v", https)
			}
		})
	}
}

// checkMounts: graft's flags name files in the mounted ConfigMaps and
// Secret, mounted as directories (not subPath) so updates reach graft.
func checkMounts(t *testing.T, out output, ps corev1.PodSpec, c corev1.Container) {
	t.Helper()
	flags := map[string]string{}
	for _, a := range c.Args {
		if k, v, ok := strings.Cut(a, "="); ok {
			flags[k] = v
		}
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("args %v: want serve first", c.Args)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		volumes[v.Name] = v
	}
	source := func(path string) (corev1.Volume, string) {
		for _, m := range c.VolumeMounts {
			if m.SubPath != "" {
				t.Errorf("volumeMount %s uses subPath: updates would never reach graft", m.Name)
			}
			if rel, ok := strings.CutPrefix(path, m.MountPath+"/"); ok {
				return volumes[m.Name], rel
			}
			if path == m.MountPath {
				return volumes[m.Name], ""
			}
		}
		t.Errorf("%s is not on a mounted volume", path)
		return corev1.Volume{}, ""
	}
	cfgVol, cfgKey := source(flags["--config"])
	if cfgVol.ConfigMap == nil || cfgVol.ConfigMap.Name != "graft-config" || cfgKey != "config.yaml" {
		t.Errorf("--config %s is not config.yaml of ConfigMap graft-config", flags["--config"])
	}
	tplVol, _ := source(flags["--templates-dir"])
	if tplVol.ConfigMap == nil || tplVol.ConfigMap.Name != "graft-templates" {
		t.Errorf("--templates-dir %s is not ConfigMap graft-templates", flags["--templates-dir"])
	}
	certVol, certKey := source(flags["--tls-cert"])
	keyVol, keyKey := source(flags["--tls-key"])
	if certVol.Secret == nil || certVol.Secret.SecretName != certgen.SecretName || certKey != "tls.crt" ||
		keyVol.Secret == nil || keyVol.Secret.SecretName != certgen.SecretName || keyKey != "tls.key" {
		t.Errorf("--tls-cert/--tls-key %s %s are not tls.crt/tls.key of Secret %s", flags["--tls-cert"], flags["--tls-key"], certgen.SecretName)
	}
	if len(out.find("ConfigMap")) < 2 {
		t.Error("the config and templates ConfigMaps are missing")
	}
	one[corev1.ConfigMap](t, out, "ConfigMap", "graft-config")
	one[corev1.ConfigMap](t, out, "ConfigMap", "graft-templates")
}

// TestValidatingAdmissionPolicy: one guarantee per profile, bound to deny
// both where namespaces have no graft.dev/rev and where they name the one
// revision, failing closed, for Pod creates, updates and ephemeral
// containers in the profile's namespaces but the system's and graft's,
// skipping Pods that opted out; one matchCondition (the whole check of a
// passing Pod) and one validation; and the policy for namespaces whose
// graft.dev/rev graft does not serve.
func TestValidatingAdmissionPolicy(t *testing.T) {
	out := kustomize(t, "base")
	cfg := loadConfig(t)
	vaps := out.find("ValidatingAdmissionPolicy")
	if len(vaps) != len(cfg.Profiles)+1 {
		t.Fatalf("%d policies, want one per profile (%d) and one for unknown revisions", len(vaps), len(cfg.Profiles))
	}
	for profile := range cfg.Profiles {
		name := registration.PolicyName("graft", profile)
		vap := one[admissionv1.ValidatingAdmissionPolicy](t, out, "ValidatingAdmissionPolicy", name)
		for bname, rev := range map[string]metav1.LabelSelectorRequirement{
			name:               {Key: revLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
			name + ".labelled": {Key: revLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"default"}},
		} {
			bind := one[admissionv1.ValidatingAdmissionPolicyBinding](t, out, "ValidatingAdmissionPolicyBinding", bname)
			if bind.Spec.PolicyName != vap.Name {
				t.Errorf("binding %s names policy %q, want %q", bname, bind.Spec.PolicyName, vap.Name)
			}
			if !slices.Equal(bind.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
				t.Errorf("validationActions %v, want [Deny]", bind.Spec.ValidationActions)
			}
			if mr := bind.Spec.MatchResources; mr == nil || mr.NamespaceSelector == nil ||
				!reflect.DeepEqual(mr.NamespaceSelector.MatchExpressions, []metav1.LabelSelectorRequirement{rev}) {
				t.Errorf("binding %s selects %+v, want namespaces %v", bname, mr, rev)
			}
		}
		if deref(vap.Spec.FailurePolicy) != admissionv1.Fail {
			t.Errorf("policy failurePolicy %v, want Fail", deref(vap.Spec.FailurePolicy))
		}
		mc := vap.Spec.MatchConstraints
		if mc == nil || len(mc.ResourceRules) != 1 {
			t.Fatalf("matchConstraints %+v: want one rule", mc)
		}
		r := mc.ResourceRules[0]
		if !slices.Equal(r.Operations, []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}) ||
			!slices.Equal(r.Resources, []string{"pods", "pods/ephemeralcontainers"}) {
			t.Errorf("rule %+v, want CREATE and UPDATE of pods and their ephemeral containers", r)
		}
		if got := exprValues(mc.NamespaceSelector, injectLabel, metav1.LabelSelectorOpIn); !slices.Equal(got, []string{profile}) {
			t.Errorf("%s: namespaces labelled %v, want [%s]", name, got, profile)
		}
		if got := exprValues(mc.NamespaceSelector, "kubernetes.io/metadata.name", metav1.LabelSelectorOpNotIn); !sameSet(got, systemNamespaces) {
			t.Errorf("excluded namespaces %v, want %v", got, systemNamespaces)
		}
		if got := exprValues(mc.ObjectSelector, injectLabel, metav1.LabelSelectorOpNotIn); !slices.Equal(got, []string{"false"}) || len(mc.ObjectSelector.MatchExpressions) != 1 {
			t.Errorf("objectSelector %+v, want graft.dev/inject NotIn [false] alone: a label passes no Pod", mc.ObjectSelector)
		}
		// Each set of expressions costs an evaluation: the matchCondition
		// is the whole check of a Pod that passes.
		if len(vap.Spec.MatchConditions) != 1 || len(vap.Spec.Validations) != 1 || len(vap.Spec.AuditAnnotations) != 0 {
			t.Fatalf("%d matchConditions, %d validations, %d audit annotations: want one, one, none",
				len(vap.Spec.MatchConditions), len(vap.Spec.Validations), len(vap.Spec.AuditAnnotations))
		}
		for _, v := range vap.Spec.Validations {
			if v.MessageExpression == "" || v.Reason == nil || *v.Reason != metav1.StatusReasonForbidden {
				t.Errorf("validation %q: want a messageExpression and reason Forbidden", v.Expression)
			}
		}
	}
	known := registration.UnknownRevisionPolicyName("graft")
	vap := one[admissionv1.ValidatingAdmissionPolicy](t, out, "ValidatingAdmissionPolicy", known)
	if got := exprValues(vap.Spec.MatchConstraints.NamespaceSelector, revLabel, metav1.LabelSelectorOpNotIn); !slices.Equal(got, []string{"default"}) {
		t.Errorf("%s: namespaces whose graft.dev/rev is not in %v, want [default]", known, got)
	}
	one[admissionv1.ValidatingAdmissionPolicyBinding](t, out, "ValidatingAdmissionPolicyBinding", known)
}

func TestCertManagerCertificate(t *testing.T) {
	for _, dir := range []string{"overlays/cert-manager", "overlays/ha"} {
		t.Run(dir, func(t *testing.T) {
			out := kustomize(t, dir)
			type certificate struct {
				Spec struct {
					SecretName string   `json:"secretName"`
					DNSNames   []string `json:"dnsNames"`
					IsCA       bool     `json:"isCA"`
					IssuerRef  struct {
						Name string `json:"name"`
					} `json:"issuerRef"`
				} `json:"spec"`
			}
			c := oneLoose[certificate](t, out, "Certificate", "graft-serving")
			if c.Spec.SecretName != certgen.SecretName {
				t.Errorf("serving certificate's Secret %q, want %q (what the Deployment mounts)", c.Spec.SecretName, certgen.SecretName)
			}
			want := certgen.ServiceDNSNames("graft", namespace)[2:] // .svc and .svc.cluster.local
			if !sameSet(c.Spec.DNSNames, want) {
				t.Errorf("dnsNames %v, want %v", c.Spec.DNSNames, want)
			}
			ca := oneLoose[certificate](t, out, "Certificate", c.Spec.IssuerRef.Name)
			if !ca.Spec.IsCA {
				t.Errorf("issuer %s: not a CA certificate", c.Spec.IssuerRef.Name)
			}
		})
	}
}

func TestSelfSignedCABundleIsTheCA(t *testing.T) {
	root, b := selfSignedTree(t)
	out := kustomize(t, filepath.Join(root, "overlays", "self-signed"))
	mwc := one[admissionv1.MutatingWebhookConfiguration](t, out, "MutatingWebhookConfiguration", "graft")
	for _, w := range mwc.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, b.CACert) {
			t.Errorf("%s: caBundle is not the generated ca.crt", w.Name)
		}
	}
	s := one[corev1.Secret](t, out, "Secret", certgen.SecretName)
	if s.Type != corev1.SecretTypeTLS || !bytes.Equal(s.Data["tls.crt"], b.TLSCert) || !bytes.Equal(s.Data["tls.key"], b.TLSKey) {
		t.Errorf("Secret %s: type %s, want kubernetes.io/tls with the generated tls.crt and tls.key", s.Name, s.Type)
	}
}
