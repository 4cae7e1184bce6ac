package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoFile is a path from the repository root; tests run in cmd/graft.
func repoFile(parts ...string) string {
	return filepath.Join(append([]string{"..", ".."}, parts...)...)
}

func TestTemplatesCmd(t *testing.T) {
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "x.yaml"), []byte(`name: x
description: A sidecar with a bad port at its max.
parameters:
  - {name: port, type: int, default: "80", min: "1", max: "99999", description: Port.}
fragment: |
  initContainers:
    - {name: graft-x, image: x, restartPolicy: Always, ports: [{containerPort: {{ .port }}}], securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "y.yaml"), []byte("name: ["), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(stale, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(repoFile("templates", "README.md"))
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string // prefix
		stderr   string // substring
		wantFile string // path that must then hold the built-in docs
	}{
		{name: "lint builtin", args: []string{"templates", "lint", repoFile("templates", "builtin")},
			stdout: repoFile("templates", "builtin") + ": no problems\n"},
		{name: "lint the templates tree", args: []string{"templates", "lint", repoFile("templates")},
			stdout: repoFile("templates") + ": no problems\n"},
		{name: "lint finds a problem", args: []string{"templates", "lint", bad}, code: 1,
			stdout: filepath.Join(bad, "x.yaml") + `: x: with port="99999": initContainers[graft-x]: ports[0].containerPort: must be between 1 and 65535`,
			stderr: "graft: templates lint: 1 problem(s) in " + bad},
		{name: "lint a missing dir", args: []string{"templates", "lint", filepath.Join(bad, "nope")}, code: 1,
			stderr: "no such file or directory"},
		{name: "lint needs a dir", args: []string{"templates", "lint"}, code: 1,
			stderr: "accepts 1 arg(s), received 0"},
		{name: "no subcommand", args: []string{"templates"}, code: 1,
			stderr: "graft: templates: missing subcommand: list, lint or docs"},
		{name: "unknown subcommand", args: []string{"templates", "fix"}, code: 1,
			stderr: `graft: unknown command "fix" for "graft templates"`},
		{name: "docs to stdout", args: []string{"templates", "docs", "--out", "-"},
			stdout: string(readme)},
		{name: "docs check current", args: []string{"templates", "docs", "--check", "--out", repoFile("templates", "README.md")}},
		{name: "docs check stale", args: []string{"templates", "docs", "--check", "--out", stale}, code: 1,
			stderr: stale + " is stale"},
		{name: "docs writes", args: []string{"templates", "docs", "--out", stale}, wantFile: stale},
		{name: "docs of a broken dir", args: []string{"templates", "docs", "--dir", broken, "--out", "-"}, code: 1,
			stderr: "graft: templates docs: templates dir " + broken + ": 1 template problem(s):\n" +
				"graft: " + filepath.Join(broken, "y.yaml") + ": y: error converting YAML to JSON"},
		{name: "lint a broken dir", args: []string{"templates", "lint", broken}, code: 1,
			stdout: filepath.Join(broken, "y.yaml") + ": y: error converting YAML to JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			if !strings.HasPrefix(stdout.String(), tc.stdout) {
				t.Errorf("stdout:\n%s\nwant prefix:\n%s", stdout.String(), tc.stdout)
			}
			if tc.stdout == "" && stdout.Len() > 0 {
				t.Errorf("unexpected stdout:\n%s", stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.stderr)
			}
			if tc.wantFile != "" {
				got, err := os.ReadFile(tc.wantFile)
				if err != nil || !bytes.Equal(got, readme) {
					t.Errorf("%s does not hold the docs (err %v)", tc.wantFile, err)
				}
			}
		})
	}
}
