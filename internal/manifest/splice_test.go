package manifest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func ops(t *testing.T, js string) []PatchOp {
	t.Helper()
	var out []PatchOp
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The splicer writes each op into the text in the layout around it, and
// the result means exactly what the patch makes of the document.
func TestSpliceOps(t *testing.T) {
	tests := []struct {
		name, in, ops, want string
	}{
		{
			name: "map key after the last entry, its block value included",
			in:   "metadata:\n  name: web\n  labels:\n    app: web\nspec: {}\n",
			ops:  `[{"op":"add","path":"/metadata/annotations","value":{"a":"1"}}]`,
			want: "metadata:\n  name: web\n  labels:\n    app: web\n  annotations:\n    a: \"1\"\nspec: {}\n",
		},
		{
			name: "several new keys of one mapping: one insertion, in order",
			in:   "metadata:\n  annotations:\n    a: x\n  name: web\n",
			ops:  `[{"op":"add","path":"/metadata/annotations/b","value":"2"},{"op":"add","path":"/metadata/annotations/c","value":"v"}]`,
			want: "metadata:\n  annotations:\n    a: x\n    b: \"2\"\n    c: v\n  name: web\n",
		},
		{
			name: "several new keys of a flow mapping: the first makes it block, the others join",
			in:   "metadata: {annotations: {a: x}, name: web}\n",
			ops:  `[{"op":"add","path":"/metadata/annotations/b","value":"2"},{"op":"add","path":"/metadata/annotations/c","value":"v"}]`,
			want: "metadata:\n  annotations:\n    a: x\n    b: \"2\"\n    c: v\n  name: web\n",
		},
		{
			name: "compact lists stay compact",
			in:   "spec:\n  containers:\n  - name: app\n    env:\n    - name: A\n      value: x\n  volumes:\n  - name: v\n",
			ops: `[{"op":"add","path":"/spec/containers/0/env/-","value":{"name":"B","value":"z"}},
			       {"op":"add","path":"/spec/initContainers","value":[{"name":"init","args":["a"]}]}]`,
			want: "spec:\n  containers:\n  - name: app\n    env:\n    - name: A\n      value: x\n    - name: B\n      value: z\n  volumes:\n  - name: v\n  initContainers:\n  - name: init\n    args:\n    - a\n",
		},
		{
			name: "indented lists stay indented, four spaces stay four",
			in:   "spec:\n    containers:\n        -   name: app\n            image: x\n",
			ops:  `[{"op":"add","path":"/spec/containers/0","value":{"name":"proxy","ports":[{"containerPort":1}]}}]`,
			want: "spec:\n    containers:\n        -   name: proxy\n            ports:\n                -   containerPort: 1\n        -   name: app\n            image: x\n",
		},
		{
			name: "an item inserted first goes above the first item's comment",
			in:   "containers:\n  # the app\n  - name: app # inline\n",
			ops:  `[{"op":"add","path":"/containers/0","value":{"name":"proxy"}}]`,
			want: "containers:\n  - name: proxy\n  # the app\n  - name: app # inline\n",
		},
		{
			name: "appended after deeper comments and before shallower ones and blank lines",
			in:   "a:\n  b:\n    - x\n      # about x\n  # about c\n\n  c: 1\n",
			ops:  `[{"op":"add","path":"/a/b/-","value":"z"}]`,
			want: "a:\n  b:\n    - x\n      # about x\n    - z\n  # about c\n\n  c: 1\n",
		},
		{
			name: "CRLF line breaks",
			in:   "metadata:\r\n  name: web\r\nspec:\r\n  containers:\r\n    - name: app\r\n",
			ops:  `[{"op":"add","path":"/spec/containers/0/env","value":[{"name":"A","value":"1"}]}]`,
			want: "metadata:\r\n  name: web\r\nspec:\r\n  containers:\r\n    - name: app\r\n      env:\r\n        - name: A\r\n          value: \"1\"\r\n",
		},
		{
			name: "no final newline stays so",
			in:   "metadata:\n  name: web",
			ops:  `[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`,
			want: "metadata:\n  name: web\n  labels:\n    a: b",
		},
		{
			name: "metadata goes before spec",
			in:   "template:\n  spec:\n    containers: []\n",
			ops:  `[{"op":"add","path":"/template/metadata","value":{"annotations":{"k":"v"}}}]`,
			want: "template:\n  metadata:\n    annotations:\n      k: v\n  spec:\n    containers: []\n",
		},
		{
			name: "a flow collection graft adds to becomes block; its untouched parts stay flow",
			in:   "spec:\n  containers: [{name: app, image: 'app:1', resources: {limits: {cpu: 1}}}] # main\n",
			ops:  `[{"op":"add","path":"/spec/containers/0/env","value":[{"name":"A","value":"1"}]}]`,
			want: "spec:\n  containers: # main\n    - name: app\n      image: 'app:1'\n      resources: {limits: {cpu: 1}}\n      env:\n        - name: A\n          value: \"1\"\n",
		},
		{
			name: "an empty flow map",
			in:   "metadata: {}\nspec: 1\n",
			ops:  `[{"op":"add","path":"/metadata/annotations","value":{"k":"v"}}]`,
			want: "metadata:\n  annotations:\n    k: v\nspec: 1\n",
		},
		{
			name: "a flow item of a block list",
			in:   "list:\n  - {name: a} # first\n  - {name: b}\n",
			ops:  `[{"op":"add","path":"/list/0/x","value":[1,2]}]`,
			want: "list:\n  - name: a # first\n    x:\n      - 1\n      - 2\n  - {name: b}\n",
		},
		{
			name: "replace a quoted scalar keeps the comment",
			in:   "annotations:\n  graft.dev/status: '{\"v\":1}' # graft's\n  other: x\n",
			ops:  `[{"op":"replace","path":"/annotations/graft.dev~1status","value":"{\"v\":2}"}]`,
			want: "annotations:\n  graft.dev/status: '{\"v\":2}' # graft's\n  other: x\n",
		},
		{
			name: "replace null with a list",
			in:   "spec:\n  initContainers: null # none yet\n  containers: []\n",
			ops:  `[{"op":"replace","path":"/spec/initContainers","value":[{"name":"a"}]}]`,
			want: "spec:\n  initContainers: # none yet\n    - name: a\n  containers: []\n",
		},
		{
			name: "replace an empty null with a map",
			in:   "metadata:\n  annotations:\nspec: 1\n",
			ops:  `[{"op":"add","path":"/metadata/annotations","value":{"k":"v"}}]`,
			want: "metadata:\n  annotations:\n    k: v\nspec: 1\n",
		},
		{
			name: "strings YAML 1.1 reads otherwise are quoted; multi-line ones are literal blocks",
			in:   "a:\n  b: 1\n",
			ops:  `[{"op":"add","path":"/a/c","value":["yes","0644","1:30","x\ny\n"]}]`,
			want: "a:\n  b: 1\n  c:\n    - \"yes\"\n    - \"0644\"\n    - \"1:30\"\n    - |\n      x\n      y\n",
		},
		{
			name: "characters before a node count as one column each",
			in:   "é: {ü: 1}\n",
			ops:  `[{"op":"add","path":"/é/k","value":"v"}]`,
			want: "é:\n  ü: 1\n  k: v\n",
		},
		{
			name: "a leading licence comment and --- line stay",
			in:   "# licence\n---\nkind: Pod\nspec:\n  containers:\n  - name: a\n",
			ops:  `[{"op":"add","path":"/spec/containers/-","value":{"name":"b"}}]`,
			want: "# licence\n---\nkind: Pod\nspec:\n  containers:\n  - name: a\n  - name: b\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ops(t, tt.ops)
			got, err := spliceOps([]byte(tt.in), o)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
			// Following the edits in the tree writes what reading the
			// text anew before every op writes.
			r := newSpliceRun()
			r.reparse = true
			if again, err := r.apply([]byte(tt.in), nil, o); err != nil || string(again) != string(got) {
				t.Errorf("read anew before every op: %v\n%s", err, again)
			}
			// And it means what the patch makes of the document.
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tt.in), &n); err != nil {
				t.Fatal(err)
			}
			before, err := NodeJSON(&n)
			if err != nil {
				t.Fatal(err)
			}
			after, err := applyOps(before, o)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sameMeaning(got, after); err != nil {
				t.Error(err)
			}
		})
	}
}

// What the splicer cannot write as an edit of the text it refuses with
// errNoSplice, for the caller to re-encode instead.
func TestSpliceOpsFallsBack(t *testing.T) {
	tests := []struct{ name, in, ops string }{
		{"remove (an upgrade op)", "a:\n  b: 1\n  c: 2\n", `[{"op":"remove","path":"/a/b"}]`},
		{"move", "a:\n  b: 1\n", `[{"op":"move","from":"/a/b","path":"/a/c"}]`},
		{"replace a block collection", "a:\n  b:\n    - 1\n", `[{"op":"replace","path":"/a/b","value":[2]}]`},
		{"aliases", "a: &x {k: v}\nb: *x\n", `[{"op":"add","path":"/a/j","value":1}]`},
		{"a scalar folded over lines", "a:\n  b: one\n    two\n", `[{"op":"replace","path":"/a/b","value":"x"}]`},
		{"a block scalar", "a:\n  b: |\n    x\n", `[{"op":"replace","path":"/a/b","value":"y"}]`},
		{"an item on the line after its dash", "a:\n  -\n    name: x\n", `[{"op":"add","path":"/a/-","value":{"name":"y"}}]`},
		{"the whole document", "a: 1\n", `[{"op":"replace","path":"","value":{}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := spliceOps([]byte(tt.in), ops(t, tt.ops))
			if !errors.Is(err, errNoSplice) {
				t.Fatalf("got %v, want errNoSplice", err)
			}
		})
	}
}

// The document-level fallback: what the splicer refuses is re-encoded in
// the document's layout, line breaks, leading comments and "---" kept, and
// means the patched document.
func TestPatchReencodesWhatCannotBeSpliced(t *testing.T) {
	in := "# licence\r\n---\r\nspec:\r\n  labels: &l {app: web}\r\n  selector: *l\r\n  containers:\r\n  - name: app\r\n    image: x"
	docs, err := parseDocuments("in", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	d := docs[0]
	why, err := d.Patch(ops(t, `[{"op":"add","path":"/spec/containers/-","value":{"name":"b"}},{"op":"remove","path":"/spec/containers/0/image"}]`), true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(why, "op \"remove\"") && !strings.Contains(why, "aliases") {
		t.Errorf("reason %q does not say why", why)
	}
	want := "# licence\r\n---\r\nspec:\r\n  labels: {app: web}\r\n  selector: {app: web}\r\n  containers:\r\n  - name: app\r\n  - name: b"
	if string(d.text) != want {
		t.Errorf("got:\n%q\nwant:\n%q", d.text, want)
	}
	var n yaml.Node
	if err := yaml.Unmarshal(d.text, &n); err != nil {
		t.Fatal(err)
	}
	got, _ := NodeJSON(&n)
	if !jsonEqual(got, []byte(`{"spec":{"labels":{"app":"web"},"selector":{"app":"web"},"containers":[{"name":"app"},{"name":"b"}]}}`)) {
		t.Errorf("means %s", got)
	}
}
