package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unreachableKubeconfig names an API server nobody answers at: the live
// commands start, and every request they make fails.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: graft-test}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAdminPorts: each long-running command serves /healthz, /readyz,
// /metrics and /version on its admin port (internal/admin), refuses what
// the port does not serve, stops serving at SIGTERM and exits 0.
func TestAdminPorts(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t)
	fromLog := func(msg, field string) func(*lockedBuffer) string {
		return func(logs *lockedBuffer) string {
			if m := findLog(logs, msg); m != nil {
				s, _ := m[field].(string)
				return s
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		// addr finds the admin port's address in the logs, "" until then.
		addr func(*lockedBuffer) string
		// ready is /readyz's answer once the command has started.
		ready  int
		metric string
	}{
		{"serve", []string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--drain-delay", "1ms"},
			fromLog("graft webhook listening", "admin_addr"), http.StatusOK, "graft_admission_duration_seconds"},
		// No audit completes: the API server is away.
		{"audit --serve", []string{"audit", "--serve", "127.0.0.1:0", "--kubeconfig", kubeconfig, "--interval", "1h"},
			func(logs *lockedBuffer) string {
				if m := regexp.MustCompile(`serving http://(\S+)/metrics`).FindStringSubmatch(logs.String()); m != nil {
					return m[1]
				}
				return ""
			}, http.StatusServiceUnavailable, "graft_audit_runs_total"},
		{"watchdog", []string{"watchdog", "--kubeconfig", kubeconfig, "--metrics-addr", "127.0.0.1:0"},
			fromLog("watchdog starting", "metrics"), http.StatusOK, "graft_watchdog_leader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs lockedBuffer
			exit := make(chan int, 1)
			go func() { exit <- run(tc.args, nil, io.Discard, &logs) }()
			var addr string
			for deadline := time.Now().Add(time.Minute); addr == ""; time.Sleep(10 * time.Millisecond) {
				select {
				case code := <-exit:
					t.Fatalf("exited %d before serving; logs:\n%s", code, logs.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("no admin address logged; logs:\n%s", logs.String())
				}
				addr = tc.addr(&logs)
			}
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			get := func(method, path string) (int, string) {
				t.Helper()
				req, _ := http.NewRequest(method, "http://"+addr+path, nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", method, path, err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(body)
			}
			if code, body := get("GET", "/healthz"); code != http.StatusOK || body != "ok\n" {
				t.Errorf("/healthz: %d %q", code, body)
			}
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
				code, body := get("GET", "/readyz")
				if code == tc.ready {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("/readyz: %d %q, want %d", code, body, tc.ready)
				}
			}
			if code, body := get("GET", "/metrics"); code != http.StatusOK || !strings.Contains(body, "\n"+tc.metric) {
				t.Errorf("/metrics: %d, without %s:\n%.2000s", code, tc.metric, body)
			}
			if code, body := get("GET", "/version"); code != http.StatusOK || body != buildInfo().String() {
				t.Errorf("/version: %d %q, want %q", code, body, buildInfo().String())
			}
			if code, _ := get("POST", "/metrics"); code != http.StatusMethodNotAllowed {
				t.Errorf("POST /metrics: %d", code)
			}
			if code, _ := get("GET", "/debug/pprof/"); code != http.StatusNotFound {
				t.Errorf("/debug/pprof/: %d", code)
			}

			if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case code := <-exit:
				if code != 0 {
					t.Errorf("exit %d after SIGTERM; logs:\n%s", code, logs.String())
				}
			case <-time.After(time.Minute):
				t.Fatalf("still running a minute after SIGTERM; logs:\n%s", logs.String())
			}
			if _, err := client.Get("http://" + addr + "/healthz"); err == nil {
				t.Error("the admin port still answers after the command exited")
			}
		})
	}
}
