package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestImagesReproducible builds graft twice, as make images does (the
// same flags, separate output directories), writes each build's archive,
// and wants the same bytes and digest: the image depends on the commit,
// not on when or where it was built.
func TestImagesReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds graft twice")
	}
	var archives [][]byte
	var refs []string
	for range 2 {
		dir := t.TempDir()
		bin := filepath.Join(dir, "graft")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=v0.0.0-repro -X main.buildTime=2026-11-28T12:00:00Z", "-o", bin, "./cmd/graft")
		cmd.Dir = "../../../.."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		out := filepath.Join(dir, "graft.tar")
		var stdout bytes.Buffer
		err := run([]string{"archive", "--out", out, "--ref", "example.com/graft:v0.0.0-repro",
			"--created", "2026-11-28T12:00:00Z", "--version", "v0.0.0-repro", "linux/amd64=" + bin}, &stdout)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, data)
		refs = append(refs, strings.TrimSpace(stdout.String()))
	}
	if refs[0] != refs[1] || !bytes.Equal(archives[0], archives[1]) {
		t.Errorf("two builds differ: %s and %s", refs[0], refs[1])
	}
	if !strings.HasPrefix(refs[0], "example.com/graft:v0.0.0-repro@sha256:") {
		t.Errorf("printed %q, want the reference and its digest", refs[0])
	}
}

func TestRunRefuses(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"push"},
		{"archive", "--out", "x.tar"},
		{"archive", "--out", "x.tar", "--ref", "a:b", "--created", "yesterday", "linux/amd64=graft"},
		{"archive", "--out", "x.tar", "--ref", "a:b", "--created", "2026-11-28T12:00:00Z", "amd64=graft"},
		{"rootfs", "--out", "dir"},
	} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("graft-image %q: no error", args)
		}
	}
}
