package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sh is a Spec running script with /bin/sh, logging to a fresh directory.
func sh(t *testing.T, name, script string) Spec {
	t.Helper()
	return Spec{Name: name, Dir: t.TempDir(), Bin: "/bin/sh", Args: []string{"-c", script}}
}

// wait waits for p to exit and returns how it exited.
func wait(t *testing.T, p *Process) error {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s has not exited", p.name)
	}
	ok, err := p.Exited()
	if !ok {
		t.Fatalf("%s: done is closed but Exited says it is running", p.name)
	}
	return err
}

func readLog(t *testing.T, p *Process) string {
	t.Helper()
	b, err := os.ReadFile(p.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spec   func(t *testing.T) Spec
		exit   int
		want   []string // substrings of the log
		absent []string // substrings the log must not hold
	}{{
		name: "stdout and stderr after a header",
		spec: func(t *testing.T) Spec { return sh(t, "echo", "echo to-stdout; echo to-stderr >&2") },
		want: []string{"=== /bin/sh -c echo to-stdout; echo to-stderr >&2\n", "to-stdout\n", "to-stderr\n"},
	}, {
		name: "exit status",
		spec: func(t *testing.T) Spec { return sh(t, "exit", "exit 3") },
		exit: 3,
	}, {
		name: "environment without proxies, plus Env",
		spec: func(t *testing.T) Spec {
			for _, k := range []string{"HTTPS_PROXY", "http_proxy", "NO_PROXY", "All_Proxy"} {
				t.Setenv(k, "http://proxy.invalid:3128")
			}
			t.Setenv("GRAFT_PROC_KEPT", "kept")
			s := sh(t, "env", "env")
			s.Env = []string{"GRAFT_PROC_ADDED=added"}
			return s
		},
		want:   []string{"GRAFT_PROC_KEPT=kept\n", "GRAFT_PROC_ADDED=added\n"},
		absent: []string{"proxy.invalid"},
	}, {
		name: "pinned to a CPU",
		spec: func(t *testing.T) Spec {
			if _, err := exec.LookPath("taskset"); err != nil {
				t.Skip("no taskset:", err)
			}
			s := sh(t, "pinned", "grep Cpus_allowed_list /proc/self/status")
			s.CPUs = "0"
			return s
		},
		want: []string{"=== taskset -c 0 /bin/sh -c grep", "Cpus_allowed_list:\t0\n"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(tc.spec(t))
			if err != nil {
				t.Fatal(err)
			}
			err = wait(t, p)
			var exit *exec.ExitError
			switch {
			case tc.exit == 0 && err != nil:
				t.Errorf("exit: %v, want success", err)
			case tc.exit != 0 && (!errors.As(err, &exit) || exit.ExitCode() != tc.exit):
				t.Errorf("exit: %v, want status %d", err, tc.exit)
			}
			log := readLog(t, p)
			for _, w := range tc.want {
				if !strings.Contains(log, w) {
					t.Errorf("log lacks %q:\n%s", w, log)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(log, a) {
					t.Errorf("log holds %q:\n%s", a, log)
				}
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"no such binary", Spec{Name: "missing", Dir: t.TempDir(), Bin: "/nonexistent/graft"}, "missing: start /nonexistent/graft"},
		{"no log directory", Spec{Name: "nolog", Dir: "/nonexistent", Bin: "/bin/sh"}, "nolog: log file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(tc.spec)
			if err == nil {
				_ = p.Stop(time.Second)
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// A restarted process keeps its earlier log, unless told to truncate it.
func TestLogRestart(t *testing.T) {
	for _, tc := range []struct {
		truncate bool
		want     string
	}{
		{false, "=== /bin/sh -c echo first\nfirst\n=== /bin/sh -c echo second\nsecond\n"},
		{true, "=== /bin/sh -c echo second\nsecond\n"},
	} {
		t.Run(fmt.Sprintf("truncate=%v", tc.truncate), func(t *testing.T) {
			dir := t.TempDir()
			for _, word := range []string{"first", "second"} {
				p, err := Start(Spec{Name: "again", Dir: dir, Bin: "/bin/sh", Args: []string{"-c", "echo " + word}, Truncate: tc.truncate})
				if err != nil {
					t.Fatal(err)
				}
				if err := wait(t, p); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, "again.log"))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("log:\n%s\nwant:\n%s", b, tc.want)
			}
		})
	}
}

func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string // prints "ready" once its signal handling is set up
		grace  time.Duration
		killed bool
	}{
		{"stops on SIGTERM", "echo ready; exec sleep 60", 30 * time.Second, false},
		{"ignores SIGTERM, killed", "trap '' TERM; echo ready; exec sleep 60", 100 * time.Millisecond, true},
		{"already exited", "echo ready", time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(sh(t, "stop", tc.script))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			err = Poll(ctx, nil, 10*time.Millisecond, func(context.Context) error {
				if !strings.Contains(readLog(t, p), "ready\n") {
					return errors.New("not ready")
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			err = p.Stop(tc.grace)
			if got := errors.Is(err, ErrKilled); got != tc.killed || (!tc.killed && err != nil) {
				t.Fatalf("Stop: %v, want killed %v", err, tc.killed)
			}
			if p.Running() {
				t.Fatal("running after Stop")
			}
			if err := p.Stop(tc.grace); err != nil {
				t.Errorf("second Stop: %v", err)
			}
		})
	}
}

// TestDiesWithParent runs a parent (this test binary again) that starts a
// child and is then killed: the child must die too, with no teardown run.
func TestDiesWithParent(t *testing.T) {
	if os.Getenv("GRAFT_PROC_PARENT") == "1" {
		p, err := Start(Spec{Name: "orphan", Dir: os.Getenv("GRAFT_PROC_DIR"), Bin: "/bin/sh", Args: []string{"-c", "exec sleep 60"}})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(p.Pid())
		time.Sleep(time.Minute)
		return
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestDiesWithParent$")
	parent.Env = append(os.Environ(), "GRAFT_PROC_PARENT=1", "GRAFT_PROC_DIR="+t.TempDir())
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = parent.Process.Kill()
		_ = parent.Wait()
		t.Fatalf("parent: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		_ = parent.Process.Kill()
		_ = parent.Wait()
		t.Fatalf("parent said %q", line)
	}
	if !alive(pid) {
		t.Fatalf("child %d is not running while its parent is", pid)
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = Poll(ctx, nil, 10*time.Millisecond, func(context.Context) error {
		if alive(pid) {
			return fmt.Errorf("child %d outlived its parent", pid)
		}
		return nil
	})
	if err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatal(err)
	}
}

// alive reports whether pid is a process that has not ended: a zombie
// waiting for a reaper has ended.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && !strings.HasPrefix(string(b[i+1:]), " Z")
}

func TestCPUTime(t *testing.T) {
	// Burn a little CPU so the count has something to show.
	var x uint64
	for i := range uint64(50_000_000) {
		x += i * i
	}
	got, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if got <= 0 || x == 0 {
		t.Errorf("CPUTime of this process = %s after a busy loop", got)
	}
	if _, err := CPUTime(-1); err == nil {
		t.Error("CPUTime of no process succeeded")
	}
}
