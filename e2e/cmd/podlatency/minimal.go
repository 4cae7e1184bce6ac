package main

import (
	"bufio"
	"context"
	"crypto/tls"
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
	"strings"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/webhook/certgen"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// minimalWebhook is the cheapest mutating webhook there can be: the
// standard library's TLS server answering every AdmissionReview with one
// fixed JSONPatch that adds one container, whatever the Pod holds. It
// reads only the envelope's apiVersion and uid.
type minimalWebhook struct {
	patch string // base64 of the JSONPatch
}

// maxReview bounds a request body, as a webhook must.
const maxReview = 8 << 20

func (m *minimalWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var review struct {
		APIVersion string `json:"apiVersion"`
		Request    struct {
			UID string `json:"uid"`
		} `json:"request"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxReview)).Decode(&review); err != nil || review.Request.UID == "" {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	resp, err := json.Marshal(map[string]any{
		"apiVersion": review.APIVersion,
		"kind":       "AdmissionReview",
		"response": map[string]any{
			"uid": review.Request.UID, "allowed": true, "patchType": "JSONPatch", "patch": m.patch,
		},
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(resp)
}

// setupMinimal serves the minimal webhook on loopback and registers it for
// its own namespace, with reinvocationPolicy: Never: the API server calls
// it exactly once per create.
func setupMinimal(ctx context.Context, b *bench) (variant, error) {
	v := variant{name: "minimal", ns: "lat-minimal", injected: injectedBy(b.sidecar), webhook: "minimal.bench.graft.dev"}
	patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/spec/initContainers", "value": []json.RawMessage{b.sidecarJSON}}})
	if err != nil {
		return v, err
	}
	return v, serveFixed(ctx, b, v, patch)
}

// setupReplay serves graft's own patch for the corpus Pod from the
// minimal webhook: it parts what the API server does with graft's patch
// from what graft's server adds to a call.
func setupReplay(ctx context.Context, b *bench) (variant, error) {
	v := variant{name: "replay", ns: "lat-replay", injected: injectedBy(b.sidecar), webhook: "replay.bench.graft.dev"}
	patch, err := graftPatch()
	if b.replayFor != nil {
		patch, err = graftPatchFor(corpus.Marshal("", "replay", "CREATE", v.ns, b.replayFor))
	}
	if err != nil {
		return v, err
	}
	return v, serveFixed(ctx, b, v, patch)
}

// serveFixed serves a minimal webhook answering with patch on loopback
// and registers it for v's namespace. The server is a process of its own
// (this binary, run with serveFixedArg), as graft is: in this process it
// would share the CPU with the clients and the informer that measure it,
// and on a loaded machine its calls time out where graft's do not (220
// of 10,000 fleet creates, every one "context deadline exceeded" at the
// webhook's 3 s, in a run where graft's two processes had none).
func serveFixed(ctx context.Context, b *bench, v variant, patch []byte) error {
	certs, err := certgen.Generate(certgen.Options{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(b.dir, v.name+"-webhook-")
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"tls.crt": certs.TLSCert, "tls.key": certs.TLSKey, "patch.json": patch} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	addr, stop, err := startFixed(ctx, dir)
	if err != nil {
		return fmt.Errorf("minimal webhook: %w", err)
	}
	b.onClose(stop)

	url := "https://" + addr + "/mutate"
	none := admissionregv1.SideEffectClassNone
	fail := admissionregv1.Fail
	never := admissionregv1.NeverReinvocationPolicy
	timeout := int32(3)
	wh := &admissionregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: v.name},
		Webhooks: []admissionregv1.MutatingWebhook{{
			Name:                    v.webhook,
			ClientConfig:            admissionregv1.WebhookClientConfig{URL: &url, CABundle: certs.CACert},
			Rules:                   podCreateRules(),
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{variantLabel: v.name}},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			ReinvocationPolicy:      &never,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := b.c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, wh, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("register minimal webhook: %w", err)
	}
	return b.c.CreateNamespace(ctx, v.ns, map[string]string{variantLabel: v.name})
}

// podCreateRules selects Pod CREATE.
func podCreateRules() []admissionregv1.RuleWithOperations {
	scope := admissionregv1.NamespacedScope
	return []admissionregv1.RuleWithOperations{{
		Operations: []admissionregv1.OperationType{admissionregv1.Create},
		Rule:       admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope},
	}}
}

var errUnmutated = errors.New("dry-run Pod came back unmutated")

// serveFixedArg, as podlatency's first argument, makes it the minimal
// webhook's process: serveFixedWebhook.
const serveFixedArg = "-serve-fixed-webhook"

// startFixed starts this binary as the minimal webhook's process for the
// files in dir and returns the address it listens on, and a func that
// stops it.
func startFixed(ctx context.Context, dir string) (string, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(self, serveFixedArg, dir)
	cmd.Stderr = os.Stderr
	// Its stdin is its lifeline: it stops when this end closes, so it
	// never outlives this process.
	lifeline, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		lifeline.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		addr <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case a := <-addr:
		if a == "" {
			stop()
			return "", nil, errors.New("the webhook process exited before it listened")
		}
		return a, stop, nil
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, errors.New("the webhook process did not listen within 30 s")
	}
}

// serveFixedWebhook is the minimal webhook's process: it serves the
// patch in dir/patch.json with dir/tls.{crt,key} on a loopback port it
// prints, until its stdin closes.
func serveFixedWebhook(dir string) error {
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		return err
	}
	patch, err := os.ReadFile(filepath.Join(dir, "patch.json"))
	if err != nil {
		return err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: &minimalWebhook{patch: base64.StdEncoding.EncodeToString(patch)}, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if _, err := fmt.Println(ln.Addr().String()); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
