package e2e

import (
	"bufio"
	"bytes"
	"net/http"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// auditExporter is a running `graft audit --serve`, as
// deploy/components/audit runs it, against the suite's cluster.
type auditExporter struct {
	url  string // http://host:port
	cmd  *exec.Cmd
	done chan error
}

// plainHTTP reaches loopback servers without a proxy.
var plainHTTP = &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}

// startAuditExporter starts `graft audit --serve` on a free loopback port
// with the suite's configuration, waits until its first audit is served,
// and stops it (SIGTERM, exit 0 required) when the test ends.
func startAuditExporter(t *testing.T, kubeconfig string, args ...string) *auditExporter {
	t.Helper()
	cmd := exec.Command(graftBin(t), append([]string{"audit", "--serve", "127.0.0.1:0", "--interval", "2s",
		"--kubeconfig", kubeconfig, "--config", env.cluster.GraftConfigPath()}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &auditExporter{cmd: cmd, done: make(chan error, 1)}
	addr := make(chan string, 1)
	var logs bytes.Buffer
	go func() {
		re := regexp.MustCompile(`serving (http://\S+)/metrics`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		e.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-e.done:
			if err != nil {
				t.Errorf("graft audit --serve after SIGTERM: %v", err)
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("graft audit --serve did not stop on SIGTERM")
		}
	})
	select {
	case e.url = <-addr:
	case err := <-e.done:
		t.Fatalf("graft audit --serve exited: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("graft audit --serve logged no address")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := plainHTTP.Get(e.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("graft audit --serve not ready after 60 s (last: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return e
}
