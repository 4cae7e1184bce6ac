package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/internal/names"
)

// The feature gate of KEP-6060, alpha and off by default in 1.37.
const webhookTokenGate = "APIServerWebhookAuthenticationToken"

// TestAPIServerToken: graft configured with server.apiServerToken serves
// an API server that presents a token bound to graft's
// MutatingWebhookConfiguration (KEP-6060, the gate on), and refuses
// everyone else. In 1.37 the gate makes the API server issue such tokens
// (a TokenRequest bound to the configuration, attesting admission reviews
// of all groups, which needs the "attest" permission); the API server
// presents one through its admission kubeconfig's tokenFile, as a cluster
// operator sets it up. graft reviews it as its ServiceAccount with
// system:auth-delegator, as the docs tell users to. A control plane of its
// own: the gate and the admission configuration are API server flags.
func TestAPIServerToken(t *testing.T) {
	needsKubernetes(t, 37, "KEP-6060's webhook-bound tokens (alpha in 1.37)")
	ctx := t.Context()
	opts, err := cluster.OptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(cluster.TempRoot(), "graft-e2e-token-")
	if err != nil {
		t.Fatal(err)
	}
	opts.Dir, opts.APIOnly, opts.Nodes = dir, true, 0

	// The API server's side: every webhook host ("*") is called with the
	// token in tokenFile, which client-go reads again every minute.
	tokenFile := filepath.Join(dir, "webhook-token")
	kubeconfig := filepath.Join(dir, "admission-kubeconfig.yaml")
	admission := filepath.Join(dir, "admission.yaml")
	writeTestFile(t, kubeconfig, fmt.Sprintf("apiVersion: v1\nkind: Config\nusers:\n- name: \"*\"\n  user:\n    tokenFile: %s\n", tokenFile))
	writeTestFile(t, admission, fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %s
`, kubeconfig))
	cp, err := cluster.StartControlPlane(ctx, opts, "--feature-gates="+webhookTokenGate+"=true", "--admission-control-config-file="+admission)
	t.Cleanup(func() {
		if cp != nil {
			if err := cp.Stop(); err != nil {
				t.Errorf("teardown: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	if err != nil {
		t.Fatal(err)
	}
	client := cp.Client

	// graft, reviewing tokens as the shipped ServiceAccount.
	g, err := cp.NewGraft("graft-token")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("graft's log:\n%s", g.Log(8<<10))
		}
		_ = g.Stop()
	})
	wh := env.shipped.LoopbackWebhook(g.Addr(), g.CA())
	base := "https://" + g.Addr()
	graftKubeconfig := filepath.Join(dir, "graft-kubeconfig.yaml")
	graftToken := serviceAccountToken(t, client, "graft-system", "graft", []string{"system:auth-delegator"}, nil)
	writeTokenKubeconfig(t, graftKubeconfig, cp, graftToken)
	config, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "base", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	config = fmt.Appendf(config, "server:\n  templatesDir: %s\n  apiServerToken:\n    audience: %s\n    webhookConfiguration: %s\n",
		filepath.Join(repoRoot, "deploy", "base", "templates"), base, wh.Name)
	if err := g.Start(ctx, config, "KUBECONFIG="+graftKubeconfig); err != nil {
		t.Fatal(err)
	}

	// The registration, then the API server's token bound to it.
	reg, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, wh, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	webhookToken := serviceAccountToken(t, client, "kube-system", "webhook-auth", nil, &authnv1.TokenRequestSpec{
		Audiences: []string{*reg.Webhooks[0].ClientConfig.URL},
		BoundObjectRef: &authnv1.BoundObjectReference{
			APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration", Name: reg.Name, UID: reg.UID,
		},
		Attestations: map[string]authnv1.AttestationValue{"admissionReviewAPIGroups": {"*"}},
	})
	writeTestFile(t, tokenFile, webhookToken)

	ns := "e2e-token"
	if err := cp.CreateNamespace(ctx, ns, map[string]string{names.Inject: "enabled"}); err != nil {
		t.Fatal(err)
	}
	if err := cp.WaitInjecting(ctx, ns); err != nil {
		t.Fatalf("the API server's calls with its token: %v", err)
	}
	if got := graftRefusals(t, g, "api_server_token"); got != 0 {
		t.Errorf("graft refused %g of the API server's calls for their token", got)
	}

	// Anyone else reaching graft's port: no token, a ServiceAccount token
	// for graft's URL but bound to nothing, a token for another path of
	// graft's (the same registration: accepted).
	plain := serviceAccountToken(t, client, ns, "default", nil, &authnv1.TokenRequestSpec{Audiences: []string{base + "/inject"}})
	hc := graftClient(t, g)
	for _, c := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount's token for graft's URL", plain, http.StatusUnauthorized},
		{"graft's own token", graftToken, http.StatusUnauthorized},
		{"the API server's token", webhookToken, http.StatusOK},
	} {
		for _, path := range []string{"/inject", "/inject/mesh-proxy"} {
			if got := postReview(t, hc, base+path, c.token); got != c.want {
				t.Errorf("%s on %s: %d, want %d", c.name, path, got, c.want)
			}
		}
	}
	if got := graftRefusals(t, g, "api_server_token"); got != 6 {
		t.Errorf("graft_http_refusals_total{reason=api_server_token} = %g, want 6", got)
	}
}

// serviceAccountToken makes ServiceAccount ns/name (and ns), binds it to
// clusterRoles, and returns a token for it: the default one, or as spec
// asks. webhook-auth is given the permission to attest admission reviews
// of all API groups, which a token bound to a webhook configuration needs.
func serviceAccountToken(t *testing.T, client kubernetes.Interface, ns, name string, clusterRoles []string, spec *authnv1.TokenRequestSpec) string {
	t.Helper()
	ctx := t.Context()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}}
	if spec != nil && spec.BoundObjectRef != nil {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-webhook-auth-attest"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"admissionReviewAPIGroups"},
			ResourceNames: []string{"*"}, Verbs: []string{"attest"},
		}}}
		if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		clusterRoles = append(clusterRoles, role.Name)
	}
	for _, role := range clusterRoles {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e2e-%s-%s-%s", ns, name, strings.ReplaceAll(role, ":", "-"))},
			Subjects:   subject,
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		}
		if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	req := &authnv1.TokenRequest{}
	if spec != nil {
		req.Spec = *spec
	}
	// RBAC takes a moment to see new bindings: retry a refusal.
	var lastErr error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		got, err := client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, req, metav1.CreateOptions{})
		if err == nil {
			return got.Status.Token
		}
		lastErr = err
	}
	t.Fatalf("token for %s/%s: %v", ns, name, lastErr)
	return ""
}

// writeTokenKubeconfig writes a kubeconfig reaching cp's API server with token.
func writeTokenKubeconfig(t *testing.T, path string, cp *cluster.Cluster, token string) {
	t.Helper()
	rc := cp.RESTConfig()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	cfg.AuthInfos["graft"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "graft", Namespace: "graft-system"}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// graftClient trusts g's certificate.
func graftClient(t *testing.T, g *cluster.Graft) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(g.CA()) {
		t.Fatal("graft's CA: no certificate")
	}
	tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// postReview posts a Pod's AdmissionReview to url with token (none if
// empty) and returns the status code.
func postReview(t *testing.T, hc *http.Client, url, token string) int {
	t.Helper()
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"e2e-token",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
		`"namespace":"e2e-token","operation":"CREATE","userInfo":{"username":"e2e"},` +
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"e2e-token"},` +
		`"spec":{"containers":[{"name":"app","image":"registry.invalid/app:1"}]}}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"?timeout=10s", bytes.NewReader([]byte(review)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// graftRefusals is graft_http_refusals_total for reason, from g's admin port.
func graftRefusals(t *testing.T, g *cluster.Graft, reason string) float64 {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	for _, m := range scrape(t, c, "http://"+g.AdminAddr()+"/metrics", "")["graft_http_refusals_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "reason" && l.GetValue() == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
