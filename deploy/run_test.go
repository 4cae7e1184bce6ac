package deploy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestDeploymentRunsGraft runs the graft binary the way the self-signed
// overlay's Deployment describes it: its args, its ConfigMaps and Secret
// laid out at their mount paths (under a temporary root), its ports moved
// to free loopback ones. The probes' paths must answer on the admin port,
// and every webhook's path must inject a Pod over TLS verified with the
// webhook's caBundle under the Service's DNS name, as the API server would.
func TestDeploymentRunsGraft(t *testing.T) {
	root, _ := selfSignedTree(t)
	out := kustomize(t, filepath.Join(root, "overlays", "self-signed"))
	d := one[appsv1.Deployment](t, out, "Deployment", "graft")
	mwc := one[admissionv1.MutatingWebhookConfiguration](t, out, "MutatingWebhookConfiguration", "graft")
	c := d.Spec.Template.Spec.Containers[0]

	// Lay out each volume at its mount path under fsRoot.
	fsRoot := t.TempDir()
	volumes := map[string]corev1.Volume{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		files := map[string][]byte{}
		switch v := volumes[m.Name]; {
		case v.ConfigMap != nil:
			for k, val := range one[corev1.ConfigMap](t, out, "ConfigMap", v.ConfigMap.Name).Data {
				files[k] = []byte(val)
			}
		case v.Secret != nil:
			files = one[corev1.Secret](t, out, "Secret", v.Secret.SecretName).Data
		default:
			t.Fatalf("volume %s: neither a ConfigMap nor a Secret", m.Name)
		}
		dir := filepath.Join(fsRoot, m.MountPath)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}

	ports := map[string]string{} // container port name -> loopback address
	for _, p := range c.Ports {
		ports[p.Name] = freeLoopbackAddr(t)
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		flag, val, ok := strings.Cut(a, "=")
		switch {
		case !ok:
			args[i] = a
		case strings.HasPrefix(val, "/"):
			args[i] = flag + "=" + filepath.Join(fsRoot, val)
		case flag == "--addr":
			args[i] = flag + "=" + ports["https"]
		case flag == "--admin-addr":
			args[i] = flag + "=" + ports["admin"]
		default:
			args[i] = a
		}
	}
	if !slices.Contains(c.Args, "--addr=:8443") || !slices.Contains(c.Args, "--admin-addr=:8080") {
		t.Fatalf("args %v: want --addr=:8443 and --admin-addr=:8080, the container ports", c.Args)
	}

	bin := filepath.Join(t.TempDir(), "graft")
	buildAsDockerfile(t, bin, "v0.0.0-deploy-test")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("graft's log:\n%s", stderr.String())
		}
	})

	// The probes, as the kubelet makes them.
	admin := "http://" + ports["admin"]
	waitReady(t, admin+c.ReadinessProbe.HTTPGet.Path, exited)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.StartupProbe} {
		if code := httpGet(t, admin+p.HTTPGet.Path); code != http.StatusOK {
			t.Errorf("GET %s on the admin port: %d", p.HTTPGet.Path, code)
		}
	}

	// Every webhook, as the API server calls it.
	for _, w := range mwc.Webhooks {
		if _, err := callWebhook(t, w, ports["https"]); err != nil {
			t.Errorf("%s: %v", w.Name, err)
		}
	}

	// SIGTERM, as the kubelet sends it: graft turns not-ready at once and
	// keeps answering, each answer closing its connection, for its drain
	// delay; then it exits 0 within its shutdown grace.
	drainDelay, grace := shutdownSettings(t, c.Args)
	// graft's own deadlines end it after drainDelay + grace; the minute
	// only bounds a hang, with room for a loaded machine.
	hang := time.After(drainDelay + grace + time.Minute)
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Not ready while it still serves, so that the endpoint leaves
	// before the listener closes: the order matters, not how soon.
	for httpGet(t, admin+c.ReadinessProbe.HTTPGet.Path) != http.StatusServiceUnavailable {
		select {
		case err := <-exited:
			t.Fatalf("graft exited (%v) %s after SIGTERM without turning %s not-ready",
				err, time.Since(signalled), c.ReadinessProbe.HTTPGet.Path)
		case <-hang:
			t.Fatalf("%s still ready %s after SIGTERM", c.ReadinessProbe.HTTPGet.Path, time.Since(signalled))
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}
	if closing, err := callWebhook(t, mwc.Webhooks[0], ports["https"]); err != nil || !closing {
		t.Errorf("during the drain: %v, Connection: close %v; want an answer that closes its connection", err, closing)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("graft exited with %v after SIGTERM", err)
		}
		if took := time.Since(signalled); took < drainDelay {
			t.Errorf("graft exited %s after SIGTERM, before its drain delay %s", took, drainDelay)
		}
	case <-hang:
		t.Errorf("graft still running %s after SIGTERM (drain delay %s, grace %s)", drainDelay+grace+time.Minute, drainDelay, grace)
	}
}

// callWebhook sends a Pod review to webhook w at addr as the API server
// would: TLS verified with its caBundle under the Service's DNS name, on
// its path with its timeout. It checks that the Pod is injected and
// reports whether the answer closed the connection.
func callWebhook(t *testing.T, w admissionv1.MutatingWebhook, addr string) (closing bool, err error) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(w.ClientConfig.CABundle) {
		t.Fatalf("%s: no CA in caBundle", w.Name)
	}
	svc := w.ClientConfig.Service
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs:    roots,
		ServerName: svc.Name + "." + svc.Namespace + ".svc",
	}}}
	defer client.CloseIdleConnections()
	url := fmt.Sprintf("https://%s%s?timeout=%ds", addr, *svc.Path, *w.TimeoutSeconds)
	resp, err := client.Post(url, "application/json", strings.NewReader(podReview("u-"+w.Name)))
	if err != nil {
		return false, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	var review struct {
		Response struct {
			UID       string `json:"uid"`
			Allowed   bool   `json:"allowed"`
			PatchType string `json:"patchType"`
			Patch     string `json:"patch"`
		} `json:"response"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &review) != nil {
		return resp.Close, fmt.Errorf("%d %s", resp.StatusCode, body)
	}
	r := review.Response
	if r.UID != "u-"+w.Name || !r.Allowed || r.PatchType != "JSONPatch" {
		return resp.Close, fmt.Errorf("uid %q allowed %v patchType %q, want the Pod allowed with a JSONPatch", r.UID, r.Allowed, r.PatchType)
	}
	if status := injectedStatus(t, r.Patch); status == "" {
		return resp.Close, errors.New("the patched Pod carries no graft.dev/status")
	}
	return resp.Close, nil
}

const reviewedPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"apps"},` +
	`"spec":{"containers":[{"name":"app","image":"app:1"}]}}`

func podReview(uid string) string {
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"` + uid + `",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
		`"namespace":"apps","operation":"CREATE","object":` + reviewedPod + `}}`
}

// injectedStatus applies a base64 JSONPatch to reviewedPod and returns the
// result's graft.dev/status annotation.
func injectedStatus(t *testing.T, patch64 string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(patch64)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply([]byte(reviewedPod))
	if err != nil {
		t.Fatalf("the patch does not apply: %v", err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(patched, &pod); err != nil {
		t.Fatal(err)
	}
	return pod.Annotations["graft.dev/status"]
}

// freeLoopbackAddr returns a loopback address with a port free right now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func httpGet(t *testing.T, url string) int {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	return resp.StatusCode
}

// waitReady polls url until it answers 200, graft exits, or a minute
// passes (a slow start on a loaded machine is not a failure here).
func waitReady(t *testing.T, url string, exited <-chan error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for httpGet(t, url) != http.StatusOK {
		select {
		case err := <-exited:
			t.Fatalf("graft exited before it was ready: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within a minute", url)
		}
	}
}
