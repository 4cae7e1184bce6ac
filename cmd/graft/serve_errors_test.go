package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graftdev/graft/webhook/certgen"
)

// TestServeStartupErrors drives `graft serve` into every start-up failure
// it can meet: each ends with exit code 1 and one line naming what failed
// (the file or the address) and why, never a panic, and leaves nothing
// behind: no self-signed certificate directory in $TMPDIR, no listener
// still bound.
func TestServeStartupErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	b, err := certgen.Generate(certgen.Options{DNSNames: []string{"localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Write(good); err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(good, certgen.CertFile), filepath.Join(good, certgen.KeyFile)
	garbage := writeTestFile(t, dir, "garbage.pem", "not a certificate\n")
	badConfig := writeTestFile(t, dir, "bad.yaml", "profiles:\n  enabled:\n    templates: [mesh-proxy\n")
	emptyConfig := writeTestFile(t, dir, "empty.yaml", "# nothing yet\n")
	busy := holdPort(t)
	missing := filepath.Join(dir, "missing", "tls.crt")

	cases := []struct {
		name string
		args []string
		// want are substrings of the one error line.
		want []string
	}{
		{"webhook port in use", []string{"--addr", busy},
			[]string{`webhook address "` + busy + `"`, "address already in use"}},
		{"admin port in use", []string{"--admin-addr", busy},
			[]string{`admin address "` + busy + `"`, "address already in use"}},
		{"bad --addr", []string{"--addr", "no-port"},
			[]string{`webhook address "no-port"`, "missing port in address"}},
		{"bad --admin-addr", []string{"--admin-addr", "127.0.0.1:99999"},
			[]string{`admin address "127.0.0.1:99999"`, "invalid port"}},
		{"missing certificate", []string{"--tls-cert", missing, "--tls-key", key},
			[]string{"serving certificate: " + missing, "no such file or directory"}},
		{"garbage certificate", []string{"--tls-cert", garbage, "--tls-key", key},
			[]string{"serving certificate " + garbage + " with key " + key, "failed to find any PEM data in certificate input"}},
		{"garbage key", []string{"--tls-cert", cert, "--tls-key", garbage},
			[]string{"serving certificate " + cert + " with key " + garbage, "failed to find any PEM data in key input"}},
		{"certificate and key that do not match", []string{"--tls-cert", cert, "--tls-key", filepath.Join(dir, "other.key")},
			[]string{"serving certificate " + cert + " with key " + filepath.Join(dir, "other.key"), "private key does not match public key"}},
		// A directory stands for an unreadable file: the tests may run
		// as root, which reads any file whatever its mode.
		{"unreadable key", []string{"--tls-cert", cert, "--tls-key", good},
			[]string{"serving key: read " + good, "is a directory"}},
		{"missing --client-ca", []string{"--client-ca", filepath.Join(dir, "missing-ca.crt")},
			[]string{"client CA: " + filepath.Join(dir, "missing-ca.crt"), "no such file or directory"}},
		{"--client-ca without certificates", []string{"--client-ca", garbage},
			[]string{"client CA " + garbage, "no PEM certificates"}},
		{"TMPDIR missing", []string{"--tmpdir", filepath.Join(dir, "no-such-tmp")},
			[]string{"self-signed certificate: no directory for it in " + filepath.Join(dir, "no-such-tmp"), "no such file or directory"}},
		{"config not YAML", []string{"--config", badConfig},
			[]string{badConfig + ":3:", "invalid YAML"}},
		{"empty config", []string{"--config", emptyConfig},
			[]string{emptyConfig + ":", "no configuration"}},
		{"missing config", []string{"--config", filepath.Join(dir, "nope.yaml")},
			[]string{filepath.Join(dir, "nope.yaml"), "no such file or directory"}},
	}
	// A key that belongs to another certificate.
	other, err := certgen.Generate(certgen.Options{DNSNames: []string{"localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.key"), other.TLSKey, 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			args, tmpdir := withTmpdir(tc.args, tmp)
			t.Setenv("TMPDIR", tmpdir)
			// Whichever address the case does not set is a free one, so
			// the failure is the case's own, after the other port bound.
			args = append([]string{"serve"}, args...)
			if !hasFlag(args, "--addr") {
				args = append(args, "--addr", "127.0.0.1:0")
			}
			if !hasFlag(args, "--admin-addr") {
				args = append(args, "--admin-addr", "127.0.0.1:0")
			}
			var stderr lockedBuffer
			code := run(args, nil, io.Discard, &stderr)
			checkStartupFailure(t, code, stderr.String(), tc.want)
			assertEmptyDir(t, tmp)
		})
	}

	// The webhook port bound before the admin port failed is free again.
	t.Run("webhook listener released", func(t *testing.T) {
		free := freePort(t)
		var stderr lockedBuffer
		code := run([]string{"serve", "--addr", free, "--admin-addr", busy}, nil, io.Discard, &stderr)
		checkStartupFailure(t, code, stderr.String(), []string{"admin address"})
		ln, err := net.Listen("tcp", free)
		if err != nil {
			t.Fatalf("webhook address still bound after the failed start: %v", err)
		}
		ln.Close()
	})
}

// TestServeFullTmpdir: the self-signed certificate cannot be written (a
// full disk, here a file size limit of 0, which makes every write to a
// file fail as a full disk does); graft says so and removes the directory
// it made. It runs graft in a child process, which alone gets the limit.
func TestServeFullTmpdir(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command("graft-fsize0", "serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stderr bytes.Buffer // a pipe: the size limit applies to files only
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	checkStartupFailure(t, code, stderr.String(), []string{"self-signed certificate: writing it to " + tmp, "file too large"})
	assertEmptyDir(t, tmp)
}

// checkStartupFailure wants exit code 1 and a last line "graft: ..."
// holding every string of want, with no panic.
func checkStartupFailure(t *testing.T, code int, stderr string, want []string) {
	t.Helper()
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
		t.Fatalf("panicked:\n%s", stderr)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "graft: ") {
		t.Fatalf("last line %q is not graft's error; stderr:\n%s", last, stderr)
	}
	for _, w := range want {
		if !strings.Contains(last, w) {
			t.Errorf("error %q does not say %q", last, w)
		}
	}
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind in $TMPDIR: %s", e.Name())
	}
}

// withTmpdir takes the test-only --tmpdir DIR out of args: the case runs
// with TMPDIR=DIR instead of tmp.
func withTmpdir(args []string, tmp string) ([]string, string) {
	for i, a := range args {
		if a == "--tmpdir" {
			return append(append([]string{}, args[:i]...), args[i+2:]...), args[i+1]
		}
	}
	return args, tmp
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// holdPort returns a loopback address bound for the whole test.
func holdPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// freePort returns a loopback address nothing listens on (just now).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func writeTestFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
