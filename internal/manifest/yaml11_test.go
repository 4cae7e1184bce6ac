package manifest

import (
	"regexp"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// One rule for YAML 1.1: every document graft reads means to graft what
// it means to kubectl, or graft refuses it naming document, path and
// value. kubectl's reader, sigs.k8s.io/yaml, is the reference here: for
// each input either graft's JSON equals kubectl's, or graft says where
// and to quote it.
// docErrorPrefix is how an error about a document starts: its file and
// line, then which document.
var docErrorPrefix = regexp.MustCompile(`^in\.yaml:[1-9][0-9]*: document [1-9]`)

func TestYAML11OneRule(t *testing.T) {
	tests := []struct {
		name, in string
		err      string // "" if graft reads it, as kubectl does
	}{
		{"a name no", "metadata:\n  name: no\n", `document 1: metadata.name: no is the boolean false to kubectl, which reads YAML 1.1, where Kubernetes takes a string: quote it`},
		{"a kind Y", "kind: Y\n", `document 1: kind: Y is the boolean true to kubectl`},
		{"an apiVersion", "apiVersion: on\n", `apiVersion: on is the boolean true`},
		{"a namespace", "metadata: {namespace: N}\n", `metadata.namespace: N is the boolean false`},
		{"a parameter off", "metadata:\n  annotations:\n    graft.dev/mesh-proxy.enabled: off\n", `document 1: metadata.annotations["graft.dev/mesh-proxy.enabled"]: off is the boolean false`},
		{"a label key on and value yes", "metadata:\n  labels: {on: yes}\n", `document 1: metadata.labels: the key on is sent as "true" by kubectl, which reads YAML 1.1: quote it to mean "on"`},
		{"a label value", "metadata:\n  labels: {app: YES}\n", `metadata.labels.app: YES is the boolean true`},
		{"a Pod template's metadata", "spec:\n  template:\n    metadata:\n      labels: {a: Off}\n", `spec.template.metadata.labels.a: Off is the boolean false`},
		{"an item of a List", "kind: List\nitems:\n- a: 1\n- metadata: {name: y}\n", `items[1].metadata.name: y is the boolean true`},
		{"a container's name", "spec:\n  containers: [{name: app, env: [{name: N, value: n}]}]\n", `spec.containers[0].env[0].name: N is the boolean false`},
		{"a volume's name", "spec:\n  volumes:\n  - name: on\n", `spec.volumes[0].name: on is the boolean true`},
		{"in the second document", "a: 1\n---\nkind: n\n", `document 2: kind: n is the boolean false`},
		{"an octal key", "data:\n  010: x\n", `data: the key 010 is sent as "8" by kubectl`},
		{"a hex key", "0x1F: x\n", `the document: the key 0x1F is sent as "31" by kubectl`},
		{"an underscored key", "1_000: x\n", `the key 1_000 is sent as "1000" by kubectl`},
		{"a float key", "1.50: x\n", `the key 1.50 is sent as "1.5" by kubectl`},
		{"an exponent key", "1e3: x\n", `the key 1e3 is sent as "1000" by kubectl`},
		{"a True key", "True: x\n", `the key True is sent as "true" by kubectl`},
		{"a null key", "~: x\n", `the key ~ is null to kubectl, which reads YAML 1.1 and refuses it: quote it`},

		// What graft reads as kubectl sends it.
		{"a boolean meant as one", "spec:\n  securityContext: {runAsNonRoot: yes}\n  hostNetwork: On\n", ""},
		{"list items and other values", "args: [a, N, YES]\nenv: {name: y, value: off}\nmetadata:\n  finalizers: [no]\n", ""},
		{"a whole document", "off\n", ""},
		{"a name outside metadata", "spec:\n  selector: {name: no}\n", ""},
		// What both read alike.
		{"quoted", "metadata:\n  name: \"no\"\n  labels: {'on': 'yes'}\nargs: ['y', !!str n]\n", ""},
		{"true and false", "a: true\nb: False\nc: TRUE\n", ""},
		{"numbers as values", "a: 010\nb: 0x1F\nc: 1_000\nd: 1.50\ne: 1e3\nf: 0o17\ng: -0b101\nh: .5\n", ""},
		{"number keys written as kubectl writes them", "80: http\n1.5: x\n-3: z\ntrue: w\n", ""},
		{"words near the booleans", "a: yess\nb: 'off'\nc: nO\nd: oN\ne: ON_\nf: n/a\n", ""},
		{"timestamps", "2001-12-14: 2001-12-14t21:59:43.10-05:00\n", ""},
		{"null values", "a: ~\nb: null\nc:\n", ""},
		{"block and folded scalars", "a: |\n  yes\nb: >\n  no\n", ""},
		{"aliases of quoted values", "a: &x 'yes'\nb: *x\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFile("in.yaml", []byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !docErrorPrefix.MatchString(err.Error()) {
					t.Fatalf("got error %v\nwant one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Read, it means what it means to kubectl, document by document.
			docs := strings.Split(tt.in, "\n---\n")
			if len(docs) != len(f.docs) {
				t.Fatalf("%d documents, want %d", len(f.docs), len(docs))
			}
			for i, d := range f.docs {
				got, err := NodeJSON(d.node)
				if err != nil {
					t.Fatal(err)
				}
				want, err := sigsyaml.YAMLToJSON([]byte(docs[i]))
				if err != nil {
					t.Fatal(err)
				}
				if !jsonEqual(got, want) {
					t.Errorf("graft reads %s, kubectl %s", got, want)
				}
			}
		})
	}
}
