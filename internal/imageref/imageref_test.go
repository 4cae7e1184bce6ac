package imageref

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		image string
		want  string // "" for an image reference, else Check's message
	}{
		{"nginx", ""},
		{"nginx:1.27", ""},
		{"docker.io/envoyproxy/envoy:v1.32.3", ""},
		{"docker.io/envoyproxy/envoy@sha256:" + strings.Repeat("ab", 32), ""},
		{"docker.io/envoyproxy/envoy:v1@sha256:" + strings.Repeat("0", 64), ""},
		{"localhost:5000/team/app", ""},
		{"Registry.Example:443/app:v1", ""}, // the host may have upper case
		{"[::1]:5000/app:v1", ""},
		{"ghcr.io/graftdev/proxy-init:1.0.0", ""},
		{"a/b__c/d--e/f.g:TAG_1.x-y", ""},
		{"app:" + strings.Repeat("t", 128), ""},

		{"", "it is empty"},
		{"nginx :1", "it contains whitespace"},
		{"nginx\n  command: [sh]", "it contains whitespace"},
		{"docker.io/../etc", `it contains ".."`},
		{"nginx:1..2", `it contains ".."`},
		{"docker.io//envoy", "it has an empty path segment"},
		{"/envoy", "it has an empty path segment"},
		{"envoy/", "it has an empty path segment"},
		{"envoy/:v1", "it has an empty path segment"},
		{"docker.io/EnvoyProxy/envoy", "it has upper-case letters (only the registry host may)"},
		{"envoy:v1:v2", notGrammar},
		{"envoy@sha256:abc", notGrammar},
		{"envoy-:1", notGrammar},
		{"-envoy", notGrammar},
		{"envoy:" + strings.Repeat("t", 129), notGrammar},
		{"envoy:-v1", notGrammar},
		{"ghcr.io/graftdev/agent:1.0.0#x", notGrammar},
		{"envoy\"", notGrammar},
	}
	valid, problem := celPrograms(t)
	for _, c := range cases {
		err := Check(c.image)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("Check(%q) = %q, want %q", c.image, got, c.want)
		}
		if ok := evalBool(t, valid, c.image); ok != (c.want == "") {
			t.Errorf("CELValid(%q) = %t, want %t", c.image, ok, c.want == "")
		}
		wantCEL := ""
		if c.want != "" {
			wantCEL = "image: " + c.want
		}
		if msg := evalString(t, problem, c.image); msg != wantCEL {
			t.Errorf("CELProblem(%q) = %q, want %q", c.image, msg, wantCEL)
		}
	}
}

func TestCheckEntry(t *testing.T) {
	for entry, ok := range map[string]bool{
		"ghcr.io/graftdev/":           true,
		"docker.io/envoyproxy/envoy":  true,
		"docker.io/envoyproxy/envoy:": true,
		"docker.io/envoyproxy/envoy@": true,
		"envoy:v1":                    true,
		"":                            false,
		"/":                           false,
		"ghcr.io//":                   false,
		"ghcr.io/../":                 false,
		"ghcr.io/graftdev/ ":          false,
		"ghcr.io/graftdev/*":          false,
	} {
		if err := CheckEntry(entry); (err == nil) != ok {
			t.Errorf("CheckEntry(%q) = %v, want ok=%t", entry, err, ok)
		}
	}
}

func TestAdmits(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("ab", 32)
	cases := []struct {
		entry, image string
		want         bool
	}{
		{"docker.io/envoyproxy/envoy", "docker.io/envoyproxy/envoy", true},
		{"docker.io/envoyproxy/envoy", "docker.io/envoyproxy/envoy:v1", true},
		{"docker.io/envoyproxy/envoy", "docker.io/envoyproxy/envoy" + digest, true},
		{"docker.io/envoyproxy/envoy", "docker.io/envoyproxy/envoy/sub:v1", true},
		{"docker.io/envoyproxy/envoy", "docker.io/envoyproxy/envoy-evil:1", false},
		{"docker.io/envoyproxy/envoy", "docker.io/envoyproxy/envoyx", false},
		{"docker.io/envoyproxy/envoy", "docker.io/envoyproxy", false},
		{"ghcr.io/graftdev/", "ghcr.io/graftdev/agent:1", true},
		{"ghcr.io/graftdev/", "ghcr.io/graftdev-copy/agent:1", false},
		{"ghcr.io/graftdev", "ghcr.io/graftdev-copy/agent:1", false},
		{"ghcr.io/graftdev", "ghcr.io/graftdev/agent:1", true},
		{"envoy:v1", "envoy:v1", true},
		{"envoy:v1", "envoy:v1" + digest, true},
		{"envoy:v1", "envoy:v1.2", false},
		{"envoy:", "envoy:v1.2", true},
		{"envoy:", "envoy-x:v1.2", false},
	}
	for _, c := range cases {
		if got := Admits(c.entry, c.image); got != c.want {
			t.Errorf("Admits(%q, %q) = %t, want %t", c.entry, c.image, got, c.want)
		}
		// Expand lists the same images for the policies.
		exact, prefixes := Expand(c.entry)
		listed := c.image == exact
		for _, p := range prefixes {
			listed = listed || strings.HasPrefix(c.image, p)
		}
		if listed != c.want {
			t.Errorf("Expand(%q) = %q, %q: lists %q: %t, want %t", c.entry, exact, prefixes, c.image, listed, c.want)
		}
	}
}

// FuzzCheck: Check, the CEL the policies run, and an independent parser
// of the reference grammar written out by hand agree on every string.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"nginx", "docker.io/envoyproxy/envoy:v1.32.3", "a..b", "a//b", "[::1]:5/x",
		"x@sha256:" + strings.Repeat("a", 64), "Host.Example/x:T", "x:-", "a\nb", "a/b:c@d:e", "a.b_c__d-e"} {
		f.Add(s)
	}
	valid, problem := celPrograms(f)
	f.Fuzz(func(t *testing.T, s string) {
		err := Check(s)
		if want := parse(s); (err == nil) != want {
			t.Fatalf("Check(%q) = %v, hand parser says valid=%t", s, err, want)
		}
		if err == nil && (strings.Contains(s, "..") || strings.Contains(s, "//") || strings.ContainsAny(s, " \t\r\n")) {
			t.Fatalf("Check(%q) admits a reference with '..', '//' or whitespace", s)
		}
		if ok := evalBool(t, valid, s); ok != (err == nil) {
			t.Fatalf("CELValid(%q) = %t, Check says %v", s, ok, err)
		}
		want := ""
		if err != nil {
			want = "image: " + err.Error()
		}
		if msg := evalString(t, problem, s); msg != want {
			t.Fatalf("CELProblem(%q) = %q, want %q", s, msg, want)
		}
	})
}

// parse is the reference grammar as a parser, written from its
// description rather than from Grammar: whether s is a reference without
// "..".
func parse(s string) bool {
	if strings.Contains(s, "..") {
		return false
	}
	rest := s
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		if !isDigest(rest[i+1:]) {
			return false
		}
		rest = rest[:i]
	}
	// A tag follows the last ':' after the last '/'.
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		if !isTag(rest[i+1:]) {
			return false
		}
		rest = rest[:i]
	}
	parts := strings.Split(rest, "/")
	if len(parts) > 1 && isHost(parts[0]) && allComponents(parts[1:]) {
		return true
	}
	return allComponents(parts)
}

func allComponents(parts []string) bool {
	for _, p := range parts {
		if !isComponent(p) {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
func isAlnum(c byte) bool      { return isLowerAlnum(c) || c >= 'A' && c <= 'Z' }
func isWord(c byte) bool       { return isAlnum(c) || c == '_' }
func isHex(c byte) bool        { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// isComponent: alphanumerics separated by one '.', one '_', "__" or
// dashes.
func isComponent(p string) bool {
	i := 0
	for {
		start := i
		for i < len(p) && isLowerAlnum(p[i]) {
			i++
		}
		if i == start {
			return false
		}
		if i == len(p) {
			return true
		}
		switch {
		case p[i] == '.':
			i++
		case strings.HasPrefix(p[i:], "__"):
			i += 2
		case p[i] == '_':
			i++
		case p[i] == '-':
			for i < len(p) && p[i] == '-' {
				i++
			}
		default:
			return false
		}
	}
}

// isHost: DNS labels joined by dots, or a bracketed IPv6 address, then
// maybe ":port".
func isHost(h string) bool {
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
		port := h[i+1:]
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return false
		}
		h = h[:i]
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		in := h[1 : len(h)-1]
		return in != "" && strings.Trim(in, "0123456789abcdefABCDEF:") == ""
	}
	for _, l := range strings.Split(h, ".") {
		if l == "" || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			if !isAlnum(l[i]) && l[i] != '-' {
				return false
			}
		}
	}
	return true
}

func isTag(t string) bool {
	if t == "" || len(t) > 128 || !isWord(t[0]) {
		return false
	}
	for i := 1; i < len(t); i++ {
		if !isWord(t[i]) && t[i] != '.' && t[i] != '-' {
			return false
		}
	}
	return true
}

// isDigest: algorithm components (a letter, then alphanumerics) joined by
// one of -_+., then ':' and at least 32 hex digits.
func isDigest(d string) bool {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) < 32 || strings.IndexFunc(hex, func(r rune) bool { return r > 0x7f || !isHex(byte(r)) }) >= 0 {
		return false
	}
	for _, c := range strings.FieldsFunc(alg, func(r rune) bool { return strings.ContainsRune("-_+.", r) }) {
		if c == "" || !(c[0] >= 'a' && c[0] <= 'z' || c[0] >= 'A' && c[0] <= 'Z') {
			return false
		}
		for i := 1; i < len(c); i++ {
			if !isAlnum(c[i]) {
				return false
			}
		}
	}
	// FieldsFunc drops empty components: two separators in a row, or one
	// at either end, are not an algorithm.
	if alg == "" || strings.ContainsRune("-_+.", rune(alg[0])) || strings.ContainsRune("-_+.", rune(alg[len(alg)-1])) {
		return false
	}
	for i := 1; i < len(alg); i++ {
		if strings.ContainsRune("-_+.", rune(alg[i])) && strings.ContainsRune("-_+.", rune(alg[i-1])) {
			return false
		}
	}
	return true
}

// celPrograms compiles CELValid and CELProblem over a string v, as
// kube-apiserver's CEL (cel-go) runs them.
func celPrograms(tb testing.TB) (valid, problem cel.Program) {
	tb.Helper()
	env, err := cel.NewEnv(cel.Variable("v", cel.StringType))
	if err != nil {
		tb.Fatal(err)
	}
	prog := func(expr string) cel.Program {
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			tb.Fatalf("%s: %v", expr, iss.Err())
		}
		p, err := env.Program(ast)
		if err != nil {
			tb.Fatal(err)
		}
		return p
	}
	return prog(CELValid("v")), prog(CELProblem("v", `"image: "`, `""`))
}

func eval(tb testing.TB, p cel.Program, s string) any {
	tb.Helper()
	out, _, err := p.Eval(map[string]any{"v": s})
	if err != nil {
		tb.Fatalf("%q: %v", s, err)
	}
	return out.Value()
}

func evalBool(tb testing.TB, p cel.Program, s string) bool     { return eval(tb, p, s).(bool) }
func evalString(tb testing.TB, p cel.Program, s string) string { return eval(tb, p, s).(string) }

// TestCheckAgreesOnBuiltReferences: references put together from the
// grammar's pieces, some with one character changed, get the same
// verdict from Check, CELValid and the hand parser. Random strings
// (FuzzCheck) seldom are references; these mostly are, or nearly.
func TestCheckAgreesOnBuiltReferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	valid, _ := celPrograms(t)
	accepted := 0
	for range 3000 {
		var b strings.Builder
		if rng.IntN(2) == 0 {
			b.WriteString(pick("docker.io", "localhost", "Reg-1.example", "[fe80::1]", "a") + pick("", ":5000", ":") + "/")
		}
		for i := range 1 + rng.IntN(3) {
			if i > 0 {
				b.WriteString("/")
			}
			b.WriteString(pick("envoy", "a", "b0", "x.y", "x_y", "x__y", "x---y", "x-", "X", ""))
		}
		if rng.IntN(2) == 0 {
			b.WriteString(":" + pick("v1.2", "latest", "_x", "-x", "1..2", "a-b.c_d"))
		}
		if rng.IntN(3) == 0 {
			b.WriteString("@" + pick("sha256", "sha256+b64", "x.y-z", "1x", "") + ":" + strings.Repeat(pick("a", "0", "F", "g"), 32+rng.IntN(2)*32))
		}
		s := []byte(b.String())
		if len(s) > 0 && rng.IntN(4) == 0 {
			s[rng.IntN(len(s))] = pick("/", ":", "@", ".", " ", "A", "-", "_")[0]
		}
		ref := string(s)
		err := Check(ref)
		if (err == nil) != parse(ref) || (err == nil) != evalBool(t, valid, ref) {
			t.Errorf("%q: Check %v, hand parser %t, CEL %t", ref, err, parse(ref), evalBool(t, valid, ref))
		}
		if err == nil {
			accepted++
		}
	}
	if accepted < 300 {
		t.Errorf("only %d of 3000 built references are valid: the test exercises too little of the grammar", accepted)
	}
}
