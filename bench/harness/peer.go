package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/graftdev/graft/bench/internal/benchtls"
)

// Peer is a server binary to measure. It is started as
// Bin Args... --addr A --admin-addr B --tls-cert C --tls-key D ExtraArgs...
// and must serve POST /inject over TLS on A and GET /readyz and /metrics
// (with go_memstats_mallocs_total) over plain HTTP on B.
type Peer struct {
	Name      string
	Bin       string
	Args      []string
	ExtraArgs []string
}

// process is a started peer.
type process struct {
	peer      Peer
	cmd       *exec.Cmd
	pid       int
	addr      string // host:port serving HTTPS
	adminURL  string // http://host:port
	exited    chan struct{}
	waitErr   error
	logPath   string
	logFile   *os.File
	httpAdmin *http.Client
}

// startPeer starts p on free loopback ports, with GOMAXPROCS=1 and, when
// pin is set, bound to CPU 0, and waits until /readyz answers 200.
func startPeer(ctx context.Context, p Peer, files benchtls.Files, pin bool, logDir string) (*process, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	admin, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := append(append([]string{}, p.Args...), "--addr", addr, "--admin-addr", admin, "--tls-cert", files.Cert, "--tls-key", files.Key)
	args = append(args, p.ExtraArgs...)
	bin := p.Bin
	if pin {
		args = append([]string{"-c", "0", bin}, args...)
		bin = "taskset"
	}
	logPath := filepath.Join(logDir, p.Name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%s: start: %w", p.Name, err)
	}
	pr := &process{
		peer: p, cmd: cmd, pid: cmd.Process.Pid, addr: addr, adminURL: "http://" + admin,
		exited: make(chan struct{}), logPath: logPath, logFile: logFile,
		httpAdmin: &http.Client{Timeout: 5 * time.Second},
	}
	go func() {
		pr.waitErr = cmd.Wait()
		close(pr.exited)
	}()
	if err := pr.waitReady(ctx, 30*time.Second); err != nil {
		pr.stop()
		return nil, fmt.Errorf("%s: %w (log: %s)", p.Name, err, logPath)
	}
	return pr, nil
}

func (pr *process) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-pr.exited:
			return fmt.Errorf("exited before ready: %v", pr.waitErr)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		resp, err := pr.httpAdmin.Get(pr.adminURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready on %s/readyz after %s", pr.adminURL, limit)
}

// alive reports whether the process is still running.
func (pr *process) alive() bool {
	select {
	case <-pr.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM, then kills the process if it has not exited in 5s.
func (pr *process) stop() error {
	defer pr.logFile.Close()
	if !pr.alive() {
		return nil
	}
	_ = pr.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-pr.exited:
	case <-time.After(5 * time.Second):
		_ = pr.cmd.Process.Kill()
		<-pr.exited
		return fmt.Errorf("%s: did not stop on SIGTERM; killed", pr.peer.Name)
	}
	var exit *exec.ExitError
	if pr.waitErr != nil && !errors.As(pr.waitErr, &exit) {
		return pr.waitErr
	}
	return nil
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
