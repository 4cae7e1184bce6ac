package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// proc is one child process whose stdout and stderr go to a log file.
type proc struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	err     error         // exit status, valid after done
}

// startProc runs bin with args, logging to dir/<name>.log (appended, so a
// restarted process keeps its earlier log).
func startProc(name, dir, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: log file: %w", name, err)
	}
	fmt.Fprintf(logf, "=== %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = childEnv()
	// The child dies with the test process even if teardown never runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("%s: start %s: %w", name, bin, err)
	}
	p := &proc{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// childEnv is the environment without proxy settings: every target here
// is on loopback and must never be routed through a proxy.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(strings.ToLower(k), "_proxy") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// exited reports whether the process has ended, and how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM, waits up to grace, then kills. It is safe to call on
// an exited process.
func (p *proc) stop(grace time.Duration) error {
	if ok, _ := p.exited(); ok {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: SIGTERM: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: kill: %w", p.name, err)
	}
	<-p.done
	return nil
}

// tail returns the last max bytes of the process's log.
func (p *proc) tail(max int64) string {
	return tailFile(p.logPath, max)
}

func tailFile(path string, max int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(log: %v)", err)
	}
	off := st.Size() - max
	prefix := ""
	if off > 0 {
		prefix = fmt.Sprintf("... (%d bytes cut; full log: %s)\n", off, path)
	} else {
		off = 0
	}
	var b bytes.Buffer
	if _, err := io.Copy(&b, io.NewSectionReader(f, off, st.Size()-off)); err != nil {
		return fmt.Sprintf("(log: %v)", err)
	}
	return prefix + b.String()
}

// poll calls check every interval until it returns nil, ctx ends, or the
// process p (if any) exits. It returns the last error from check.
func poll(ctx context.Context, p *proc, interval time.Duration, check func(context.Context) error) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		if p != nil {
			if ok, exitErr := p.exited(); ok {
				return fmt.Errorf("%s exited (%v) before it was ready: %w", p.name, exitErr, err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}
