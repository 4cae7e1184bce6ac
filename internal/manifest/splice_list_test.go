package manifest

import (
	"strings"
	"testing"
)

// A List's items spliced one by one read the same as the whole List
// spliced as one text, op after op, read anew each time (the quadratic
// way graft did it before): the speed changes, not a byte of output.
func TestSpliceListMatchesWholeText(t *testing.T) {
	podOps := func(i string) string {
		return `{"op":"add","path":"/items/` + i + `/metadata/annotations","value":{"graft.dev/status":"{\"v\":2}"}},
		        {"op":"add","path":"/items/` + i + `/spec/initContainers","value":[{"name":"proxy","restartPolicy":"Always","args":["--x","yes"]}]},
		        {"op":"add","path":"/items/` + i + `/spec/containers/0/env","value":[{"name":"A","value":"1"}]},
		        {"op":"add","path":"/items/` + i + `/spec/volumes","value":[{"name":"v","emptyDir":{}}]}`
	}
	tests := []struct {
		name, in, ops string
	}{
		{
			name: "compact items",
			in: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n  spec:\n    containers:\n    - name: app\n" +
				"- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: b\n  spec:\n    containers:\n    - name: app\n",
			ops: "[" + podOps("0") + "," + podOps("1") + "]",
		},
		{
			name: "indented items, comments between them, keys after items",
			in: "kind: List\nitems:\n  # the first\n  - kind: Pod\n    metadata: {name: a, labels: {app: a}}\n    spec:\n      containers:\n        - name: app # main\n\n" +
				"  # the second\n  - kind: Pod\n    metadata:\n      name: b\n    spec:\n      containers: [{name: app}]\n# trailing\napiVersion: v1\n",
			ops: "[" + podOps("0") + `,{"op":"add","path":"/items/0/metadata/labels/x","value":"y"},` + podOps("1") + "]",
		},
		{
			name: "only some items edited, CRLF, no final newline",
			in:   "kind: List\r\nitems:\r\n  - kind: Service\r\n    metadata: {name: s}\r\n  - kind: Pod\r\n    metadata:\r\n      name: b\r\n    spec:\r\n      containers:\r\n        - name: app",
			ops:  "[" + podOps("1") + "]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ops(t, tt.ops)
			got, listed, err := spliceListOps([]byte(tt.in), o)
			if err != nil || !listed {
				t.Fatalf("spliced by item: %v, %v", listed, err)
			}
			r := newSpliceRun()
			r.reparse = true
			want, err := r.apply([]byte(tt.in), nil, o)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("by item:\n%s\nwhole text:\n%s", got, want)
			}
		})
	}
}

// What is not an edit inside the items of a block sequence is left to the
// whole-text splicer.
func TestSpliceListDeclines(t *testing.T) {
	list := "kind: List\nitems:\n  - kind: Pod\n    metadata:\n      name: a\n"
	tests := []struct{ name, in, ops string }{
		{"not a List", "kind: Pod\nmetadata:\n  name: a\n", `[{"op":"add","path":"/metadata/labels","value":{}}]`},
		{"an op on the List's own fields", list, `[{"op":"add","path":"/metadata","value":{}}]`},
		{"a new item", list, `[{"op":"add","path":"/items/-","value":{"kind":"Pod"}}]`},
		{"an index past the items", list, `[{"op":"add","path":"/items/1/metadata/labels","value":{}}]`},
		{"a leading zero", list, `[{"op":"add","path":"/items/00/metadata/labels","value":{}}]`},
		{"a move", list, `[{"op":"move","from":"/items/0/metadata/name","path":"/items/0/metadata/x"}]`},
		{"flow items", "kind: List\nitems: [{kind: Pod, metadata: {name: a}}]\n", `[{"op":"add","path":"/items/0/metadata/labels","value":{}}]`},
		{"aliases", "kind: List\nitems:\n  - &p {kind: Pod}\n  - *p\n", `[{"op":"add","path":"/items/0/x","value":1}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, listed, err := spliceListOps([]byte(tt.in), ops(t, tt.ops))
			if listed || err != nil {
				t.Errorf("got listed=%v, err=%v; want it left to the whole-text splicer", listed, err)
			}
		})
	}
}

// Items are cut at their head comments: what sits between two items stays
// with the item below it (the first item's comments, above the sequence's
// first dash, stay with the List's head, written as they were).
func TestListItemsLines(t *testing.T) {
	in := "items:\n  # one\n  - a: 1\n\n  # two\n  - b: 2\n    c: 3\nkind: List\n"
	l, err := findListItems([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := []string{string(l.itemText(0)), string(l.itemText(1))}
	want := []string{"  - a: 1\n\n", "  # two\n  - b: 2\n    c: 3\n"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("items %q, want %q", got, want)
	}
}
