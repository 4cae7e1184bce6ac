package inject

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// formatsExample is the README's example record, as graft writes it.
const formatsExample = `{"version":2,"injected":["graft-proxy","graft-otel-agent"],"templates":[` +
	`{"name":"mesh-proxy","revision":"default","digest":"9f86d081884c7d65","initContainers":["graft-proxy"],` +
	`"annotations":["redirect.graft.dev/mode"],"appContainers":{"app":{"env":["OTEL_SERVICE_NAME"],"volumeMounts":["graft-otel"]}}},` +
	`{"name":"otel-agent","revision":"2026-12","digest":"0123456789abcdef","initContainers":["graft-otel-agent"],"volumes":["graft-otel"]}]}`

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name, value string
		want        Status
	}{
		{"version 2", formatsExample, Status{Version: 2, Injected: []string{"graft-proxy", "graft-otel-agent"}, Templates: []TemplateStatus{
			{Name: "mesh-proxy", Revision: "default", Digest: "9f86d081884c7d65", InitContainers: []string{"graft-proxy"},
				Annotations:   []string{"redirect.graft.dev/mode"},
				AppContainers: map[string]AppEdits{"app": {Env: []string{"OTEL_SERVICE_NAME"}, VolumeMounts: []string{"graft-otel"}}}},
			{Name: "otel-agent", Revision: "2026-12", Digest: "0123456789abcdef", InitContainers: []string{"graft-otel-agent"}, Volumes: []string{"graft-otel"}},
		}}},
		{"version 2, nothing injected", `{"version":2}`, Status{Version: 2}},
		{"keys in another order, spaces, unknown keys", ` { "templates" : [ { "digest":"d", "later":{"x":[1,{"y":null}]}, "name":"a", "revision":"r",` +
			` "containers":null } ], "version" : 2, "injected":[], "also":true } `,
			Status{Version: 2, Templates: []TemplateStatus{{Name: "a", Revision: "r", Digest: "d"}}}},
		{"escapes in names", `{"version":2,"templates":[{"name":"a","revision":"r","digest":"d","appContainers":{"app":{"env":["A\"B","\u00e9"]}}}]}`,
			Status{Version: 2, Templates: []TemplateStatus{{Name: "a", Revision: "r", Digest: "d",
				AppContainers: map[string]AppEdits{"app": {Env: []string{`A"B`, "é"}}}}}}},
		{"version 1", `{"templates":["agent"],"initContainers":["graft-agent"],"volumes":["graft-agent-run"]}`,
			Status{Version: 1, Injected: []string{"graft-agent"}, Templates: []TemplateStatus{{Name: "agent"}},
				Legacy: &LegacyStatus{InitContainers: []string{"graft-agent"}, Volumes: []string{"graft-agent-run"}}}},
		{"version 1, empty", `{}`, Status{Version: 1, Legacy: &LegacyStatus{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatus(tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseStatusRefuses(t *testing.T) {
	for _, value := range []string{
		``, `null`, `[]`, `"x"`, `{`, `{"version":2}x`, `{"version":2}{}`,
		`{"version":3}`, `{"version":22}`, `{"version":2.0}`, `{"version":"2"}`, `{"version":-2}`,
		`{"version":2,"templates":["agent"]}`,                               // version 2 lists entries
		`{"templates":[{"name":"a","revision":"r","digest":"d"}]}`,          // entries need version 2
		`{"version":2,"templates":[{"revision":"r"}]}`,                      // an entry needs a name
		`{"version":2,"templates":[{"name":""}]}`,                           // a non-empty one
		`{"version":2,"injected":[1]}`,                                      // names are strings
		`{"version":2,"injected":["a\x"]}`,                                  // not a JSON escape
		`{"version":2,"injected":["a\u12"]}`,                                // short \u
		"{\"version\":2,\"injected\":[\"a\x01\"]}",                          // control byte
		"{\"version\":2,\"injected\":[\"\xff\"]}",                           // not UTF-8
		`{"version":2,"templates":[{"name":"a","appContainers":{"c":[]}}]}`, // edits are an object
		`{"version":2,"templates":{}}`,
	} {
		if st, err := ParseStatus(value); err == nil {
			t.Errorf("ParseStatus(%q) = %+v, want an error", value, st)
		}
	}
}

// TestStatusValueRoundTrips: the canonical form parses back to itself, and
// Value is what the request path writes for the same record.
func TestStatusValueRoundTrips(t *testing.T) {
	st, err := ParseStatus(formatsExample)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Value(); got != formatsExample {
		t.Fatalf("Value:\n%s\nwant\n%s", got, formatsExample)
	}
	// Injected is recomputed; a version 1 record's names have no template.
	st.Injected = nil
	if got := st.Value(); got != formatsExample {
		t.Fatalf("Value without Injected:\n%s", got)
	}
	v1, err := ParseStatus(`{"templates":["agent"],"initContainers":["graft-agent"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := v1.Value(); got != `{"version":2,"templates":[{"name":"agent","revision":"","digest":""}]}` {
		t.Fatalf("version 1 as version 2: %s", got)
	}
	// Names that need escaping are written so they read back.
	odd := Status{Version: 2, Templates: []TemplateStatus{{Name: "t", Revision: "r", Digest: "d",
		AppContainers: map[string]AppEdits{"z": {Env: []string{`A"B\C`, "é\t"}}, "a": {VolumeMounts: []string{"v"}}}}}}
	back, err := ParseStatus(odd.Value())
	if err != nil {
		t.Fatalf("%s: %v", odd.Value(), err)
	}
	if !reflect.DeepEqual(back.Templates, odd.Templates) || !json.Valid([]byte(odd.Value())) {
		t.Fatalf("round trip of %s gave %+v", odd.Value(), back)
	}
	if !strings.Contains(odd.Value(), `"appContainers":{"a":`) {
		t.Fatalf("appContainers not sorted by name: %s", odd.Value())
	}
}

// FuzzParseStatus: the status is read from Pods anyone may create. No byte
// sequence panics the parser; whatever it accepts, graft writes back in a
// canonical form that is valid JSON and a fixed point of parse and write.
func FuzzParseStatus(f *testing.F) {
	for _, s := range []string{formatsExample, `{}`, `{"version":2}`,
		`{"templates":["agent"],"initContainers":["graft-agent"],"volumes":["graft-agent-run"]}`,
		`{"version":2,"templates":[{"name":"a","revision":"r","digest":"d","appContainers":{"app":{"env":["A\"B"]}}}]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		st, err := ParseStatus(value)
		if err != nil {
			return
		}
		canon := st.Value()
		if !json.Valid([]byte(canon)) {
			t.Fatalf("Value of %q is not JSON: %s", value, canon)
		}
		again, err := ParseStatus(canon)
		if err != nil {
			t.Fatalf("Value of %q does not parse: %s: %v", value, canon, err)
		}
		if again.Value() != canon {
			t.Fatalf("not a fixed point: %s then %s", canon, again.Value())
		}
	})
}

func TestAppendUnescaped(t *testing.T) {
	tests := []struct {
		raw, want string
		plain     bool
	}{
		{`{\"version\":2}`, `{"version":2}`, true},
		{`a\/b`, `a/b`, true},
		{`a\\b`, `a\b`, false},
		{`tab\there`, "tab\there", false},
		{`\u00e9\u0041`, "éA", true},
		{`\ud83d\ude00`, "😀", true},
		{`\ud83d`, "\uFFFD", true}, // a lone surrogate reads as U+FFFD, as encoding/json does
		{`\u001f`, "\x1f", false},
		{"é", "é", false},
	}
	for _, tt := range tests {
		got, plain, err := appendUnescaped(nil, tt.raw)
		if err != nil || string(got) != tt.want || plain != tt.plain {
			t.Errorf("appendUnescaped(%q) = %q, %t, %v; want %q, %t", tt.raw, got, plain, err, tt.want, tt.plain)
		}
		var viaJSON string
		if err := json.Unmarshal([]byte(`"`+tt.raw+`"`), &viaJSON); err != nil || viaJSON != tt.want {
			t.Errorf("%q: encoding/json reads %q (%v)", tt.raw, viaJSON, err)
		}
	}
	for _, raw := range []string{`\`, `a\x`, `\u12`, `\u12g4`} {
		if got, _, err := appendUnescaped(nil, raw); err == nil {
			t.Errorf("appendUnescaped(%q) = %q, want an error", raw, got)
		}
	}
}

// FuzzStatusAnnotation puts arbitrary status values on an injected Pod and
// on a fresh one: graft never panics, answers with valid JSON, and what it
// patches applies and needs no second patch.
func FuzzStatusAnnotation(f *testing.F) {
	f.Add(formatsExample)
	f.Add(`{"templates":["agent"],"initContainers":["graft-agent"],"volumes":["graft-agent-run"]}`)
	f.Add(`{"version":2,"templates":[{"name":"agent","revision":"default","digest":"0","initContainers":["graft-agent"],"appContainers":{"web":{"env":["A\"B"]}}}]}`)
	e := newTestEngine(f, goldenConfig())
	injected := admitGeneric(f, e, Options{Profile: "agent"}, twoContainerPod(nil))
	f.Fuzz(func(t *testing.T, value string) {
		for _, base := range []map[string]any{twoContainerPod(nil), injected} {
			pod := decodeGeneric(t, mustJSON(t, base))
			setStatusAnnotation(value)(pod)
			review := podReview(pod, "fuzz")
			resp, res, err := e.Admit(nil, review, Options{Profile: "agent"})
			if err != nil {
				t.Fatalf("admit: %v", err)
			}
			if !json.Valid(resp) {
				t.Fatalf("invalid response: %s", resp)
			}
			if res.Decision != DecisionInject {
				continue
			}
			again := podReview(json.RawMessage(applyResponse(t, review, resp)), "again")
			if p := responsePatch(t, mustAdmit(t, e, again, Options{Profile: "agent"})); p != nil {
				t.Fatalf("status %q: a second call patches again: %s", value, p)
			}
		}
	})
}
