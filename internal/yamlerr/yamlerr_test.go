package yamlerr

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func decodeAll(data string) error {
	dec := yaml.NewDecoder(strings.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// Each case marks the line the problem is on with "# <-": the line a
// user fixes.
func TestLocate(t *testing.T) {
	for name, text := range map[string]string{
		"a key dedented into a list": `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: nginx
    ports:
  - containerPort: 80
   bad: x # <-
`,
		"a tab": "a: 1\nb:\n\tc: 2 # <-\n",
		"a mapping value in a plain scalar": `a: 1
b: 2
c: d: e # <-
f: 3
`,
		"in the second document": `a: 1
---
b: 2
c:
  - x
  y: z # <-
`,
		"an unknown escape": `a: 1
b: "x\qy" # <-
`,
		"indentation in a nested mapping": `spec:
  template:
    metadata:
      labels:
        app: web
     name: x # <-
`,
	} {
		t.Run(name, func(t *testing.T) {
			err := decodeAll(text)
			if err == nil {
				t.Fatal("the text decodes: the case tests nothing")
			}
			want := 0
			for i, l := range strings.Split(text, "\n") {
				if strings.HasSuffix(l, "# <-") {
					want = i + 1
				}
			}
			line, problem := Locate([]byte(text), err)
			if line != want {
				t.Errorf("line %d, want %d (the library said %q)", line, want, err)
			}
			if problem == "" || strings.HasPrefix(problem, "yaml:") || strings.HasPrefix(problem, "line ") {
				t.Errorf("problem %q: want the library's message without its prefix", problem)
			}
		})
	}
}

func TestLocateNotASyntaxError(t *testing.T) {
	if line, _ := Locate([]byte("a: 1\n"), errors.New("something else")); line != 0 {
		t.Errorf("line %d for an error that is not the text's", line)
	}
	if line, _ := Locate([]byte("a: 1\n"), errors.New("yaml: line 1: did not find expected key")); line != 0 {
		t.Errorf("line %d for a text that decodes", line)
	}
	if line, p := Locate(nil, nil); line != 0 || p != "" {
		t.Errorf("Locate(nil, nil) = %d, %q", line, p)
	}
}

func FuzzLocate(f *testing.F) {
	f.Add([]byte("a: 1\nb:\n\tc: 2\n"))
	f.Add([]byte("a: [1, 2\nb: 3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		err := decodeAll(string(data))
		line, _ := Locate(data, err)
		if err == nil && line != 0 {
			t.Fatalf("line %d for text that decodes", line)
		}
		if lines := bytes.Count(data, []byte("\n")) + 1; line < 0 || line > lines {
			t.Fatalf("line %d of a %d-line text", line, lines)
		}
	})
}
