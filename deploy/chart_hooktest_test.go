package deploy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/probe"
	"github.com/graftdev/graft/webhook"
)

// testHook returns the `helm test` Pod of a render, checking it is the
// only test Pod.
func testHook(t *testing.T, out output) corev1.Pod {
	t.Helper()
	pods := out.find("Pod")
	if len(pods) != 1 {
		t.Fatalf("%d Pods rendered, want the test Pod alone", len(pods))
	}
	p := one[corev1.Pod](t, out, "Pod", pods[0].name)
	if p.Annotations["helm.sh/hook"] != "test" {
		t.Fatalf("Pod %s is not a test hook: %v", p.Name, p.Annotations)
	}
	return p
}

// TestChartTestHook: every variant renders a `helm test` Pod that runs
// graft probe through graft's Service, under the restricted Pod Security
// level, with no token, mounting only a CA (never the serving key),
// outside graft's selectors.
func TestChartTestHook(t *testing.T) {
	h := newHelm(t)
	for _, v := range chartVariants(t, "") {
		t.Run(v.name, func(t *testing.T) {
			out := h.render(t, v.args...)
			p := testHook(t, out)
			var d appsv1.Deployment
			for _, o := range out.find("Deployment") {
				if ownDeployment(o.name) {
					d = one[appsv1.Deployment](t, out, "Deployment", o.name)
				}
			}
			svc := one[corev1.Service](t, out, "Service", d.Name)
			c := p.Spec.Containers[0]
			wantURL := "https://" + svc.Name + "." + namespace + ".svc:443/inject"
			if c.Image != d.Spec.Template.Spec.Containers[0].Image || !slices.Equal(c.Args, []string{"probe", "--ca-file=/etc/graft/ca/ca.crt", wantURL}) {
				t.Errorf("test Pod runs %s %v, want graft's image with probe --ca-file=/etc/graft/ca/ca.crt %s", c.Image, c.Args, wantURL)
			}
			if p.Spec.RestartPolicy != corev1.RestartPolicyNever || p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
				t.Error("the test Pod restarts or mounts a token")
			}
			sc := c.SecurityContext
			if p.Spec.SecurityContext == nil || !deref(p.Spec.SecurityContext.RunAsNonRoot) || sc == nil || deref(sc.AllowPrivilegeEscalation) ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				t.Error("the test Pod does not meet the restricted Pod Security level")
			}
			if len(p.Spec.Volumes) != 1 {
				t.Fatalf("volumes %v, want the CA alone", p.Spec.Volumes)
			}
			switch vol := p.Spec.Volumes[0]; {
			case vol.Secret != nil:
				if len(vol.Secret.Items) != 1 || vol.Secret.Items[0].Key != "ca.crt" {
					t.Errorf("the test Pod mounts %v of Secret %s, want ca.crt alone", vol.Secret.Items, vol.Secret.SecretName)
				}
			case vol.ConfigMap != nil:
				cm := one[corev1.ConfigMap](t, out, "ConfigMap", vol.ConfigMap.Name)
				if cm.Annotations["helm.sh/hook"] != "test" || !strings.Contains(cm.Data["ca.crt"], "BEGIN CERTIFICATE") {
					t.Errorf("ConfigMap %s: want a test hook holding the caBundle", cm.Name)
				}
			default:
				t.Errorf("the CA volume is neither a Secret nor a ConfigMap: %+v", vol)
			}
			if selects(d.Spec.Selector, p.Labels) || selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, p.Labels) {
				t.Error("graft's selectors take the test Pod")
			}
		})
	}
}

// TestChartTestHookProbesGraft: what the test Pod does, done here against
// graft's real server: ci/graft-certs-values.yaml rendered alone, graft
// started on the configuration and certificate it renders, and the
// probe's URL, with its host name dialled on loopback, checked against the
// CA the hook mounts. The Service name, the certificate's names, the CA
// and the path all have to agree for it to pass.
func TestChartTestHookProbesGraft(t *testing.T) {
	h := newHelm(t)
	out := h.render(t, "--values", filepath.Join(chartDir, "ci", "graft-certs-values.yaml"))
	p := testHook(t, out)
	ca := one[corev1.ConfigMap](t, out, "ConfigMap", p.Spec.Volumes[0].ConfigMap.Name).Data["ca.crt"]
	secret := one[corev1.Secret](t, out, "Secret", "graft-tls")
	dir := t.TempDir()
	files := map[string][]byte{
		"config.yaml": []byte(one[corev1.ConfigMap](t, out, "ConfigMap", "graft-config").Data["config.yaml"]),
		"tls.crt":     secret.Data["tls.crt"], "tls.key": secret.Data["tls.key"],
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := webhook.New(webhook.Options{
		ConfigPath: filepath.Join(dir, "config.yaml"),
		Override: func(s *config.Server) {
			s.Addr, s.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
			s.TLSCert, s.TLSKey = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
			s.DrainDelay, s.ShutdownGrace = config.Duration{Duration: time.Millisecond}, config.Duration{Duration: time.Second}
		},
		Logger:   zap.NewNop(),
		Registry: prometheus.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("webhook server: %v", err)
		}
	}()

	target := p.Spec.Containers[0].Args[2]
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(ca)) {
		t.Fatal("the hook's CA holds no certificate")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           nil,
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		// The cluster's DNS, here: the Service's name is graft on loopback.
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != u.Host {
				t.Errorf("dialled %s, want the Service %s", addr, u.Host)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, srv.Addr().String())
		},
	}}
	defer client.CloseIdleConnections()
	r, err := probe.NewReview("graft-probe")
	if err != nil {
		t.Fatal(err)
	}
	body, _, err := probe.Send(t.Context(), client, target, r)
	if err != nil {
		t.Fatalf("probing %s: %v", target, err)
	}
	res, err := probe.Check(r, body)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Templates, "mesh-proxy") {
		t.Errorf("templates %v: want the chart's default profile's mesh-proxy", res.Templates)
	}
}
