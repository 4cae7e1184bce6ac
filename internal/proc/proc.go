// Package proc runs the child processes of the load tests and the
// end-to-end suite: servers on loopback, each logging to its own file,
// each dying with its parent, none routed through a proxy.
package proc

import (
	"bytes"
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

// ErrKilled is wrapped by Stop's error when the process outlived its grace
// period after SIGTERM and had to be killed.
var ErrKilled = errors.New("killed")

// Spec says what to run.
type Spec struct {
	// Name names the process in errors and its log, Dir/<Name>.log.
	Name string
	Dir  string
	Bin  string
	Args []string
	// Env is added (KEY=VALUE) to the parent's environment, from which
	// every *_proxy variable has been removed.
	Env []string
	// CPUs, when set, binds the process to these CPUs (a taskset -c list
	// such as "0" or "0,2-3"). taskset execs the binary, so Pid is still
	// the server's own.
	CPUs string
	// Truncate starts the log afresh; by default it is appended to, so a
	// restarted process keeps its earlier log.
	Truncate bool
}

// Process is a started child.
type Process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	err     error         // how it exited, valid after done
}

// Start starts s. Its stdout and stderr go to its log file after a header
// line with the command.
func Start(s Spec) (*Process, error) {
	bin, args := s.Bin, s.Args
	if s.CPUs != "" {
		bin, args = "taskset", append([]string{"-c", s.CPUs, s.Bin}, s.Args...)
	}
	logPath := filepath.Join(s.Dir, s.Name+".log")
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if s.Truncate {
		flags |= os.O_TRUNC
	}
	logf, err := os.OpenFile(logPath, flags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: log file: %w", s.Name, err)
	}
	fmt.Fprintf(logf, "=== %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(environ(), s.Env...)
	// The child dies with its parent even if teardown never runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("%s: start %s: %w", s.Name, bin, err)
	}
	p := &Process{name: s.Name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// environ is the parent's environment without proxy settings: every
// child here serves or calls loopback only, which no proxy may route.
func environ() []string {
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

// Name is the name the process was started with.
func (p *Process) Name() string { return p.name }

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogPath is the file the process logs to.
func (p *Process) LogPath() string { return p.logPath }

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Running reports whether the process has not exited yet.
func (p *Process) Running() bool {
	ok, _ := p.Exited()
	return !ok
}

// Stop sends SIGTERM and waits up to grace for the process to exit, then
// kills it and returns an error wrapping ErrKilled. A process that has
// already exited is no error, whatever its exit status.
func (p *Process) Stop(grace time.Duration) error {
	if !p.Running() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: SIGTERM: %w", p.name, err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: kill: %w", p.name, err)
	}
	<-p.done
	return fmt.Errorf("%s: still running %s after SIGTERM: %w", p.name, grace, ErrKilled)
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat;
// Linux fixes it at 100 for user space.
const clockTicks = 100

// CPUTime returns a process's user+system CPU time so far.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time: %w", err)
	}
	// The command name (field 2) may hold spaces: fields count from after ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu time: /proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu time: /proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu time: /proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}
