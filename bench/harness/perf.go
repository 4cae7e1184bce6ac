package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// perfRecord samples a process's stacks with Linux perf while a run is
// measured, so a missed target comes with the profile that explains it.
// The binary needs its symbol table (built without -ldflags -s).
type perfRecord struct {
	cmd  *exec.Cmd
	data string
	done chan error
}

func startPerf(pid int, data string) (*perfRecord, error) {
	bin, err := exec.LookPath("perf")
	if err != nil {
		return nil, fmt.Errorf("perf: %w", err)
	}
	// perf attaches to a running process asynchronously, and on a busy
	// machine later than any fixed pause: the samples of a short run were
	// then lost. So perf starts with its events off (-D -1) and a control
	// FIFO pair, and the load starts only once perf acknowledges "enable".
	ctl, ack := data+".ctl", data+".ack"
	for _, f := range []string{ctl, ack} {
		_ = os.Remove(f)
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			return nil, fmt.Errorf("perf control fifo: %w", err)
		}
	}
	// cpu-clock works where hardware counters are not exposed (VMs).
	cmd := exec.Command(bin, "record", "-e", "cpu-clock", "-F", "1999", "-g", "-p", strconv.Itoa(pid),
		"-D", "-1", "--control", "fifo:"+ctl+","+ack, "-o", data)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf record: %w", err)
	}
	p := &perfRecord{cmd: cmd, data: data, done: make(chan error, 1)}
	go func() {
		// perf writes its data and then re-raises SIGINT: that is success.
		if err := cmd.Wait(); err != nil && !interrupted(err) {
			p.done <- fmt.Errorf("perf record: %w: %s", err, bytes.TrimSpace(out.Bytes()))
			return
		}
		p.done <- nil
	}()
	err = p.enable(ctl, ack)
	for _, f := range []string{ctl, ack} {
		_ = os.Remove(f) // both ends are open or done with by now
	}
	if err != nil {
		_ = cmd.Process.Kill()
		<-p.done
		return nil, err
	}
	return p, nil
}

// enable turns perf's events on through its control FIFO and waits for
// the acknowledgement, bounded in time. Both FIFOs are opened read-write,
// which on Linux never blocks, so a perf that died early costs a timeout,
// not a stuck goroutine.
func (p *perfRecord) enable(ctl, ack string) error {
	c, err := os.OpenFile(ctl, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("perf record: enable: %w", err)
	}
	defer c.Close()
	a, err := os.OpenFile(ack, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("perf record: enable: %w", err)
	}
	defer a.Close()
	if _, err := c.WriteString("enable\n"); err != nil {
		return fmt.Errorf("perf record: enable: %w", err)
	}
	if err := a.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return fmt.Errorf("perf record: enable: %w", err)
	}
	buf := make([]byte, 16)
	n, err := a.Read(buf)
	switch {
	case err != nil:
		return fmt.Errorf("perf record: no acknowledgement of enable: %w", err)
	case !strings.HasPrefix(string(buf[:n]), "ack"):
		return fmt.Errorf("perf record: enable answered %q", buf[:n])
	}
	return nil
}

// stop ends the recording and writes perf report's flat profile to report.
func (p *perfRecord) stop(report string) error {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-p.done:
		if err != nil {
			return err
		}
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("perf record did not stop")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "perf", "report", "-i", p.data, "--stdio", "--no-children",
		"--sort", "symbol", "--percent-limit", "0.7", "-g", "none").CombinedOutput()
	if err != nil {
		return fmt.Errorf("perf report: %w: %s", err, bytes.TrimSpace(out))
	}
	if err := os.MkdirAll(filepath.Dir(report), 0o755); err != nil {
		return err
	}
	return os.WriteFile(report, out, 0o644)
}

func interrupted(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGINT
}
