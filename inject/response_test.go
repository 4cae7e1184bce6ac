package inject

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/graftdev/graft/internal/names"
)

// reviewAnswer is what tests read of a response.
type reviewAnswer struct {
	Response struct {
		Allowed  bool     `json:"allowed"`
		Warnings []string `json:"warnings"`
		Status   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"status"`
	} `json:"response"`
}

func readAnswer(t *testing.T, out []byte) reviewAnswer {
	t.Helper()
	var r reviewAnswer
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("response is not JSON: %v\n%.500s", err, out)
	}
	return r
}

// TestDenialsAreBounded: a Pod's author cannot make graft's answer large:
// a huge annotation value quoted in a denial is cut, with a marker.
func TestDenialsAreBounded(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	huge := strings.Repeat("x", 1<<20)
	for _, tt := range []struct {
		name string
		ann  map[string]string
	}{
		{"parameter", map[string]string{"graft.dev/agent.logLevel": huge}},
		{"templates", map[string]string{names.Templates: huge}},
		{"unknown parameter", map[string]string{"graft.dev/agent." + strings.Repeat("p", 1<<20): "1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, res, err := e.Admit(nil, podReviewWith(tt.ann), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision != DecisionDeny {
				t.Fatalf("%v/%v, want a denial", res.Decision, res.Reason)
			}
			msg := readAnswer(t, out).Response.Status.Message
			if n := utf8.RuneCountInString(msg); n != maxMessage || !strings.HasSuffix(msg, messageCut) {
				t.Errorf("message of %d characters ending %q, want %d ending %q", n, msg[max(0, len(msg)-20):], maxMessage, messageCut)
			}
			if len(out) > 8<<10 {
				t.Errorf("a %d-byte response", len(out))
			}
		})
	}
}

// TestWarningsAreBounded: each warning is under 120 characters, holds no
// control character, and a response holds at most maxWarnings, the last
// saying how many more there were.
func TestWarningsAreBounded(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	ann := map[string]string{}
	for i := range 25 {
		ann["graft.dev/agent.nope"+strconv.Itoa(i)] = "1"
	}
	ann["graft.dev/agent.port"] = strings.Repeat("9", 500)
	out, res, err := e.Admit(nil, podReviewWith(ann), Options{Profile: "lenient"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != DecisionInject {
		t.Fatalf("%v/%v, want inject", res.Decision, res.Reason)
	}
	ws := readAnswer(t, out).Response.Warnings
	if len(ws) != maxWarnings || res.Warnings != maxWarnings {
		t.Fatalf("%d warnings (Result: %d), want %d: %q", len(ws), res.Warnings, maxWarnings, ws)
	}
	if last := ws[len(ws)-1]; last != "graft: 17 more warnings not shown" {
		t.Errorf("last warning %q", last)
	}
	for _, w := range ws {
		checkWarning(t, w)
	}
}

func checkWarning(t *testing.T, w string) {
	t.Helper()
	if n := utf8.RuneCountInString(w); n >= 120 {
		t.Errorf("warning of %d characters: %q", n, w)
	}
	if strings.IndexFunc(w, unicode.IsControl) >= 0 || !utf8.ValidString(w) {
		t.Errorf("warning the API server would drop: %q", w)
	}
}

// TestBoundedText: the writer's cut, marker, escapes and control
// characters, for plain and already-escaped text.
func TestBoundedText(t *testing.T) {
	for _, tt := range []struct {
		name    string
		parts   []string
		raw     string
		max     int
		warning bool
		want    string // the JSON string's value
	}{
		{name: "fits", parts: []string{"ab", "cd"}, max: 4, want: "abcd"},
		{name: "cut", parts: []string{"ab", "cde"}, max: 4, want: "abc…"},
		{name: "escapes count once", parts: []string{`"\"é`}, max: 4, want: `"\"é`},
		{name: "escapes cut whole", parts: []string{`"\"é"x`}, max: 4, want: `"\"…`},
		{name: "invalid UTF-8", parts: []string{"a\xffb"}, max: 4, want: "a\ufffdb"},
		{name: "message keeps controls", parts: []string{"a\nb"}, max: 4, want: "a\nb"},
		{name: "warning drops controls", parts: []string{"a\nb\u0085"}, max: 5, warning: true, want: "a\ufffdb\ufffd"},
		{name: "raw", raw: `a\"\u00e9\n`, max: 4, want: "a\"é\n"},
		{name: "raw warning", raw: `a\"\u00e9\n`, max: 4, warning: true, want: "a\"é\ufffd"},
		{name: "raw cut", raw: `ab\u00e9\ud83d\ude00cd`, max: 4, want: "abé…"},
		{name: "raw pair", raw: `\ud83d\ude00`, max: 4, want: "😀"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := boundedText{dst: []byte{'"'}, max: tt.max, marker: "…", warning: tt.warning}
			if tt.raw != "" {
				b.addRaw(tt.raw)
			} else {
				for _, p := range tt.parts {
					b.add(p)
				}
			}
			var got string
			if err := json.Unmarshal(append(b.dst, '"'), &got); err != nil {
				t.Fatalf("%s: %v", b.dst, err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
