package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Every broken document of a file is reported, each on the line the
// problem is on (1-based, in the file), with its position in the file.
func TestParseReportsEveryBrokenDocument(t *testing.T) {
	in := strings.Join([]string{
		"apiVersion: v1", // 1
		"kind: Pod",
		"metadata: {name: a}",
		"spec:",
		"  containers:",
		"  - name: app",
		"   image: x", // 7: out of line
		"---",
		"apiVersion: v1", // 9
		"kind: Pod",
		"metadata:",
		"  name: b",
		"  name: c", // 13: given twice
		"spec: {containers: [{name: app, image: x}]}",
		"---",
		"apiVersion: v1", // 16: fine
		"kind: ConfigMap",
		"metadata: {name: ok}",
		"---",
		"kind: Pod",
		"metadata:",
		"  labels: {a: on}", // 22: a boolean to kubectl
		"",
	}, "\n")
	_, err := ParseFile("app.yaml", []byte(in))
	want := []string{
		"app.yaml:7: document 1: invalid YAML: did not find expected key",
		`app.yaml:13: document 2: invalid YAML: duplicate key "name"`,
		"app.yaml:22: document 4: metadata.labels.a: on is the boolean true to kubectl, which reads YAML 1.1, where Kubernetes takes a string: quote it",
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("got\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
}

func TestParseJSONErrors(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"a syntax error", "{\"kind\": \"Pod\",\n \"spec\": {\"containers\": [}\n}\n",
			`pod.json:2: document 1: invalid JSON: column 26: invalid character '}' looking for beginning of value`},
		{"the second value", "{\"kind\": \"Pod\"}\n{\"kind\":\n",
			`pod.json:2: document 2: invalid JSON: column 8: unexpected EOF`},
		// Named .json, it is JSON even when it does not start as JSON.
		{"not JSON at all", "kind: Pod\n",
			`pod.json:1: document 1: invalid JSON: column 1: invalid character 'k' looking for beginning of value`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFile("pod.json", []byte(tt.in))
			if err == nil || err.Error() != tt.want {
				t.Errorf("got  %v\nwant %s", err, tt.want)
			}
		})
	}
	// Not named JSON and not YAML either, what starts as JSON is
	// reported as JSON; a YAML flow mapping is YAML.
	if _, err := ParseFile("<stdin>", []byte("{\"a\": [}\n")); err == nil || !strings.Contains(err.Error(), "invalid JSON") {
		t.Errorf("got %v, want a JSON error", err)
	}
	if _, err := ParseFile("<stdin>", []byte("{a: b}\n")); err != nil {
		t.Errorf("a YAML flow mapping: %v", err)
	}
}

// A JSON document's nodes carry their lines, for messages about them.
func TestJSONNodesHaveLines(t *testing.T) {
	f, err := ParseFile("l.json", []byte("{\"kind\": \"List\", \"items\": [\n  {\"kind\": \"Pod\"},\n\n  {\"kind\": \"Pod\"}\n]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	items := MapGet(f.docs[0].Root(), "items")
	if got := []int{f.docs[0].Root().Line, items.Content[0].Line, items.Content[1].Line}; fmt.Sprint(got) != "[1 2 4]" {
		t.Errorf("lines %v, want [1 2 4]", got)
	}
}

func TestNoObjectsError(t *testing.T) {
	empty, _ := ParseFile("empty.yaml", nil)
	comments, _ := ParseFile("c.yaml", []byte("# only this\n---\n"))
	pod, _ := ParseFile("pod.yaml", []byte("kind: Pod\n"))
	if err := NoObjectsError([]*File{empty, pod}); err != nil {
		t.Errorf("a file with an object: %v", err)
	}
	if err := NoObjectsError([]*File{empty}); err == nil || err.Error() != "empty.yaml: no objects: it is empty or holds only comments" {
		t.Errorf("one empty file: %v", err)
	}
	if err := NoObjectsError([]*File{empty, comments}); err == nil || err.Error() != "no objects in empty.yaml, c.yaml: each is empty or holds only comments" {
		t.Errorf("two: %v", err)
	}
}

func TestJoinProblemsIsBounded(t *testing.T) {
	if JoinProblems() != nil || JoinProblems(nil, nil) != nil {
		t.Error("no problems joined into an error")
	}
	one := errors.New("one")
	if JoinProblems(nil, one) != one {
		t.Error("a single problem is not returned as it is")
	}
	var errs []error
	for i := range MaxProblems + 5 {
		errs = append(errs, fmt.Errorf("problem %d", i))
	}
	// Joined errors are flattened: the count is of problems.
	err := JoinProblems(errors.Join(errs[:3]...), JoinProblems(errs[3:]...))
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != MaxProblems+1 || lines[MaxProblems] != "... and 5 more problems" || lines[0] != "problem 0" {
		t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
	if !errors.Is(err, errs[MaxProblems+4]) {
		t.Error("a problem past the bound is not in the error's chain")
	}
}
