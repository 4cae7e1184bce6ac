package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/graftdev/graft/bench/corpus"
)

// TestServeSelfSignedAndSIGTERM runs `graft serve` as `make run` does (no
// certificate flags): it logs a self-signed CA bundle that verifies its
// TLS port and answers a review. On SIGTERM it turns not-ready and keeps
// answering during the drain delay (10 s by default), closing each
// connection after its answer; a second SIGTERM ends the delay, and it
// shuts down, exits 0 and removes the generated certificates.
func TestServeSelfSignedAndSIGTERM(t *testing.T) {
	var logs lockedBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run([]string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, nil, io.Discard, &logs)
	}()

	listening := waitLog(t, &logs, "graft webhook listening", exit)
	selfSigned := waitLog(t, &logs, "no --tls-cert/--tls-key: serving a self-signed certificate", exit)
	caPEM, err := base64.StdEncoding.DecodeString(selfSigned["ca_bundle"].(string))
	if err != nil {
		t.Fatalf("ca_bundle is not base64: %v", err)
	}
	certDir := selfSigned["dir"].(string)
	if _, err := os.Stat(certDir); err != nil {
		t.Fatalf("certificate dir: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca_bundle holds no certificate")
	}
	admin := "http://" + listening["admin_addr"].(string)
	plain := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer plain.CloseIdleConnections()
	waitLog(t, &logs, "warmed up; ready", exit)
	resp, err := plain.Get(admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz %d", resp.StatusCode)
	}

	// Reach it by a name the self-signed certificate carries.
	port := listening["addr"].(string)[strings.LastIndex(listening["addr"].(string), ":"):]
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}},
		Timeout:   10 * time.Second,
	}
	defer client.CloseIdleConnections()
	inject := func() *http.Response {
		t.Helper()
		resp, err := client.Post("https://127.0.0.1"+port+"/inject", "application/json", bytes.NewReader(corpus.Review(corpus.Small)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"patchType":"JSONPatch"`)) {
			t.Fatalf("inject: %d %.300s", resp.StatusCode, body)
		}
		return resp
	}
	if inject().Close {
		t.Error("Connection: close before SIGTERM")
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitLog(t, &logs, "shutting down: not ready, answering with Connection: close until the drain delay is over", exit)
	resp, err = plain.Get(admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz during the drain: %d", resp.StatusCode)
	}
	if !inject().Close {
		t.Error("no Connection: close during the drain")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitLog(t, &logs, "drain delay cut short", exit)
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit code %d after SIGTERM; logs:\n%s", code, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	if !strings.Contains(logs.String(), "shut down cleanly") {
		t.Errorf("no clean shutdown logged:\n%s", logs.String())
	}
	if _, err := os.Stat(certDir); !os.IsNotExist(err) {
		t.Errorf("self-signed certificate dir left behind: %v", err)
	}
}

func TestServeRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--tls-cert", "only-cert.pem"},
		{"serve", "--log-level", "loud"},
		{"serve", "--config", "/nonexistent/graft.yaml"},
		{"serve", "extra-arg"},
		{"serve", "--drain-delay", "0"},
		{"serve", "--drain-delay", "-1s"},
	} {
		var stderr lockedBuffer
		if code := run(args, nil, io.Discard, &stderr); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
		if !strings.Contains(stderr.String(), "graft:") {
			t.Errorf("%v: no error message: %s", args, stderr.String())
		}
	}
}

// waitLog waits for the JSON log line with message msg. The minute only
// bounds a hang, with room for -race on a loaded machine.
func waitLog(t *testing.T, logs *lockedBuffer, msg string, exit chan int) map[string]any {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if m := findLog(logs, msg); m != nil {
			return m
		}
		select {
		case code := <-exit:
			// The line may have been written just before the exit: look
			// once more, and leave the code for the caller.
			exit <- code
			if m := findLog(logs, msg); m != nil {
				return m
			}
			t.Fatalf("graft serve exited %d; logs:\n%s", code, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("no %q log line; logs:\n%s", msg, logs.String())
	return nil
}

// findLog returns the first JSON log line whose msg is msg, or nil.
func findLog(logs *lockedBuffer, msg string) map[string]any {
	for _, line := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			return m
		}
	}
	return nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
