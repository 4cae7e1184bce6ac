package templates

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite templates/README.md from the built-in templates")

// TestReadmeIsCurrent fails when templates/README.md no longer matches the
// built-in templates. Regenerate with `go test ./templates -update-docs` or
// `graft templates docs`.
func TestReadmeIsCurrent(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Docs(s)
	if err != nil {
		t.Fatal(err)
	}
	if *updateDocs {
		if err := os.WriteFile("README.md", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatalf("%v (generate it with `go test ./templates -update-docs`)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("templates/README.md is stale: regenerate it with `go test ./templates -update-docs` or `graft templates docs -o templates/README.md`")
	}
}

func TestDocsDescribeTemplates(t *testing.T) {
	s, err := LoadFS(fstest.MapFS{"a.yaml": {Data: []byte(`name: a
description: Does a | b.
placement: last
parameters:
  - {name: image, type: string, default: "x:1", pattern: '^(x|y):1$', description: The image.}
  - {name: cpu, type: quantity, default: 10m, min: 1m, description: CPU.}
  - {name: wait, type: duration, default: 1s, max: 1m, description: Wait.}
  - {name: count, type: int, default: "2", min: "1", max: "3", description: Count.}
  - {name: mode, type: enum, default: fast, values: [fast, slow], description: Mode.}
  - {name: debug, type: bool, default: "false", description: Debug.}
  - {name: hosts, type: list, default: "", max: "4", pattern: '^[a-z]+$', description: Hosts.}
  - {name: note, type: string, default: "", description: Free text.}
fragment: |
  initContainers:
    - {name: graft-a, image: {{ .image | quote }}, restartPolicy: Always}
  volumes:
    - {name: graft-a-data, emptyDir: {}}
  appContainers:
    env: [{name: A_ADDR, value: x}, {name: A_MODE, value: z}]
    volumeMounts: [{name: graft-a-data, mountPath: /a, readOnly: true}]
  annotations: {a.example.com/on: "yes"}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Docs(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| [a](#a) | Does a \\| b. |",
		"- native sidecar `graft-a`, placed after the Pod's init containers",
		"- volume `graft-a-data`",
		"- in every app container that does not set it already, the env var `A_ADDR`, `A_MODE`",
		"- in every app container, volume `graft-a-data` mounted read-only at `/a`",
		"- annotation `a.example.com/on`",
		"| `graft.dev/a.image` | string | `x:1` | matches `^(x\\|y):1$` | The image. |",
		"| `graft.dev/a.cpu` | quantity | `10m` | at least `1m` | CPU. |",
		"| `graft.dev/a.wait` | duration | `1s` | at most `1m` | Wait. |",
		"| `graft.dev/a.count` | int | `2` | `1` to `3` | Count. |",
		"| `graft.dev/a.mode` | enum | `fast` | one of `fast`, `slow` | Mode. |",
		"| `graft.dev/a.debug` | bool | `false` | `true` or `false` | Debug. |",
		"| `graft.dev/a.hosts` | list | (empty) | comma-separated; at most `4` items; each matches `^[a-z]+$` | Hosts. |",
		"| `graft.dev/a.note` | string | (empty) | any | Free text. |",
	} {
		if !strings.Contains(string(doc), want+"\n") {
			t.Errorf("docs lack line %q; got:\n%s", want, doc)
		}
	}
}
