package manifest

import (
	"bytes"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func TestNodeJSONTypesScalarsAsKubectl(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"quoted and plain strings", `{a: "x", b: 'y', c: z}`, `{"a":"x","b":"y","c":"z"}`},
		{"key order kept", "z: 1\na: 2\nm: 3", `{"z":1,"a":2,"m":3}`},
		{"number spellings kept", `{q: 0.250, r: 1.0, e: 1e3, n: -7}`, `{"q":0.250,"r":1.0,"e":1e3,"n":-7}`},
		{"quoted numbers stay strings", `{cpu: "0.25", port: '80'}`, `{"cpu":"0.25","port":"80"}`},
		{"octal mode as kubectl reads it", `{mode: 0644}`, `{"mode":420}`},
		{"hex int", `{n: 0x1F}`, `{"n":31}`},
		{"YAML 1.1 booleans", `{a: yes, b: off, c: "yes", d: True}`, `{"a":true,"b":false,"c":"yes","d":true}`},
		{"nulls", `{a: ~, b: null, c: }`, `{"a":null,"b":null,"c":null}`},
		{"timestamps are strings", `{t: 2024-01-02}`, `{"t":"2024-01-02"}`},
		{"escapes", "{s: \"<a&b>\\t\\\"q\\\"\"}", `{"s":"<a&b>\t\"q\""}`},
		{"block scalar", "s: |\n  a\n  b\n", `{"s":"a\nb\n"}`},
		{"aliases expanded", "a: &x {k: v}\nb: *x", `{"a":{"k":"v"},"b":{"k":"v"}}`},
		{"empty document", "", `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tt.yaml), &n); err != nil {
				t.Fatal(err)
			}
			got, err := NodeJSON(&n)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestNodeJSONRejects(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"duplicate key", "a: 1\na: 2", `duplicate key "a"`},
		{"merge key", "a: {<<: {b: 1}}", "merge keys"},
		{"infinity", "a: .inf", "not a JSON number"},
		{"NaN", "a: .nan", "not a JSON number"},
		{"non-scalar key", "? [a]\n: 1", "key must be a scalar"},
		{"deep nesting", strings.Repeat("[", maxDepth+5) + strings.Repeat("]", maxDepth+5), "nested deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tt.yaml), &n); err != nil {
				t.Fatal(err)
			}
			_, err := NodeJSON(&n)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// aliasBomb is a few hundred bytes of YAML that expands past any sane
// size: each level doubles the one before.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString(`a0: &a0 ["xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"]` + "\n")
	for i := 1; i < 40; i++ {
		p := "a" + itoa(i-1)
		b.WriteString("a" + itoa(i) + ": &a" + itoa(i) + " [*" + p + ", *" + p + "]\n")
	}
	return b.String()
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// JSON read into nodes and written as YAML reads back as the same JSON:
// types, order and spellings survive both ways.
func TestJSONNodeRoundTrip(t *testing.T) {
	tests := []string{
		`{"z":1,"a":{"b":[1,2.50,"3",true,null]},"s":"yes","t":"0.25","u":"","v":"line\nnext","w":"#not a comment","x":"123456789012345678901234567890"}`,
		`{"big":123456789012345678901234567890,"neg":-1.5e-7}`,
		`{"time":"1:30","y":"y","on":"on","No":"No"}`,
		`[]`,
		`{}`,
	}
	for _, in := range tests {
		n, err := jsonNode([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		if err := enc.Encode(n); err != nil {
			t.Fatal(err)
		}
		var back yaml.Node
		if err := yaml.Unmarshal(buf.Bytes(), &back); err != nil {
			t.Fatalf("%s: re-read %q: %v", in, buf.String(), err)
		}
		got, err := NodeJSON(&back)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != in {
			t.Errorf("round trip through\n%s\ngot  %s\nwant %s", buf.String(), got, in)
		}
	}
}

func TestCheckExpansionStopsAliasBombsWithoutExpanding(t *testing.T) {
	var bomb, fine yaml.Node
	if err := yaml.Unmarshal([]byte(aliasBomb()), &bomb); err != nil {
		t.Fatal(err)
	}
	if err := checkExpansion(&bomb); err != errExpanded {
		t.Errorf("alias bomb: err = %v, want %v", err, errExpanded)
	}
	if err := yaml.Unmarshal([]byte("a: &x {k: [1, 2]}\nb: *x\nc: [*x, *x]"), &fine); err != nil {
		t.Fatal(err)
	}
	if err := checkExpansion(&fine); err != nil {
		t.Errorf("a few aliases: %v", err)
	}
}

func TestJSONNodeRejects(t *testing.T) {
	for _, in := range []string{`{"a":}`, `{"a":1} x`, `{"a":1`, strings.Repeat("[", maxDepth+5)} {
		if _, err := jsonNode([]byte(in)); err == nil {
			t.Errorf("jsonNode(%.20q) succeeded", in)
		}
	}
}

// After expansion no node is reachable twice, so editing one place of a
// document cannot edit another; the value is the same.
func TestExpandAliasesUnshares(t *testing.T) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("a: &c {k: [1, &i {x: 1}]}\nb: *c\nc: [*i, *c]\n"), &n); err != nil {
		t.Fatal(err)
	}
	before, _ := NodeJSON(&n)
	expandAliases(&n)
	after, err := NodeJSON(&n)
	if err != nil || string(after) != string(before) {
		t.Fatalf("value changed: %s -> %s (%v)", before, after, err)
	}
	seen := map[*yaml.Node]bool{}
	var walk func(*yaml.Node)
	walk = func(x *yaml.Node) {
		if seen[x] {
			t.Fatalf("node at line %d reachable twice", x.Line)
		}
		seen[x] = true
		if x.Kind == yaml.AliasNode || x.Anchor != "" {
			t.Fatalf("alias or anchor left at line %d", x.Line)
		}
		for _, c := range x.Content {
			walk(c)
		}
	}
	walk(&n)
}
