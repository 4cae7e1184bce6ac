package proc

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var errNotYet = errors.New("not yet")

func TestPoll(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string // a process to watch; none if empty
		okAfter int    // check succeeds on this call; never if 0
		timeout time.Duration
		want    []error  // wrapped by the error
		says    []string // in the error
	}{
		{name: "ready on the third call", okAfter: 3, timeout: 30 * time.Second},
		{name: "ready while the process runs", script: "exec sleep 60", okAfter: 2, timeout: 30 * time.Second},
		{name: "deadline", timeout: 50 * time.Millisecond, want: []error{context.DeadlineExceeded, errNotYet}, says: []string{"last error: not yet"}},
		{name: "process exits first", script: "exit 7", timeout: 30 * time.Second, want: []error{errNotYet}, says: []string{"watched exited (exit status 7) before it was ready"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *Process
			if tc.script != "" {
				var err error
				if p, err = Start(sh(t, "watched", tc.script)); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = p.Stop(time.Second) })
			}
			ctx, cancel := context.WithTimeout(t.Context(), tc.timeout)
			defer cancel()
			calls := 0
			err := Poll(ctx, p, 5*time.Millisecond, func(context.Context) error {
				calls++
				if calls == tc.okAfter {
					return nil
				}
				return errNotYet
			})
			if tc.want == nil {
				if err != nil || calls != tc.okAfter {
					t.Fatalf("Poll: %v after %d calls, want success after %d", err, calls, tc.okAfter)
				}
				return
			}
			if err == nil {
				t.Fatal("Poll succeeded")
			}
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("error %q does not wrap %q", err, w)
				}
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

func TestGet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/big":
			w.Write([]byte(strings.Repeat("x", 10000)))
		case r.URL.Path != "/readyz":
			http.Error(w, "warming up", http.StatusServiceUnavailable)
		case r.Header.Get("Authorization") != "Bearer t0ken":
			http.Error(w, "who are you", http.StatusUnauthorized)
		default:
			w.Write([]byte(`{"health":"true"}`))
		}
	}))
	defer srv.Close()
	auth := http.Header{"Authorization": {"Bearer t0ken"}}
	for _, tc := range []struct {
		name   string
		path   string
		header http.Header
		body   string
		err    string
	}{
		{"ok", "/readyz", auth, `{"health":"true"}`, ""},
		{"no header", "/readyz", nil, "", "GET " + srv.URL + "/readyz: 401 who are you"},
		{"not ready", "/other", auth, "", "GET " + srv.URL + "/other: 503 warming up"},
		{"body cut at 4 KiB", "/big", nil, strings.Repeat("x", 4096), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := Get(t.Context(), srv.Client(), srv.URL+tc.path, tc.header)
			if got := errString(err); got != tc.err || string(body) != tc.body {
				t.Errorf("Get: %q, %q; want %q, %q", body, got, tc.body, tc.err)
			}
		})
	}
	if err := GetOK(t.Context(), srv.Client(), srv.URL+"/readyz"); err == nil {
		t.Error("GetOK without the header succeeded")
	}
	if err := GetOK(t.Context(), srv.Client(), srv.URL+"/big"); err != nil {
		t.Errorf("GetOK: %v", err)
	}
	srv.Close()
	if err := GetOK(t.Context(), srv.Client(), srv.URL+"/big"); err == nil {
		t.Error("GET of a closed server succeeded")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestFreeAddrs(t *testing.T) {
	addrs, err := FreeAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) != 3 {
		t.Fatalf("%d addresses, want 3", len(addrs))
	}
	seen := map[uint16]bool{}
	for _, a := range addrs {
		if !a.Addr().IsLoopback() || a.Port() == 0 || seen[a.Port()] {
			t.Errorf("%v: want a distinct loopback port in %v", a, addrs)
		}
		seen[a.Port()] = true
		l, err := net.Listen("tcp", a.String())
		if err != nil {
			t.Errorf("%v is not free: %v", a, err)
			continue
		}
		l.Close()
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		max        int64
		want       string
	}{
		{"whole", path, 10, "0123456789"},
		{"more than there is", path, 100, "0123456789"},
		{"the end", path, 4, "... (6 bytes cut; full log: " + path + ")\n6789"},
		{"no log", path + ".missing", 4, "(no log: open " + path + ".missing: no such file or directory)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tailFile(tc.path, tc.max); got != tc.want {
				t.Errorf("tail: %q, want %q", got, tc.want)
			}
		})
	}
}
