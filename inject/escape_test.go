package inject

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/graftdev/graft/bench/corpus"
)

// reencode writes the JSON text in again with its strings, keys and
// values, escaped at random: a character as \uXXXX (either case, a
// surrogate pair past the BMP), '/' as \/, quotes, backslashes and
// control characters in any of their JSON forms. Structure, order,
// numbers and literals stay as they are, so a JSON decoder reads the
// same document. Strings nested as text in a string (graft.dev/status)
// are one string here: their own JSON is not re-encoded.
func reencode(r *rand.Rand, in []byte) ([]byte, error) {
	return rewrite(in, func(dst []byte, s string) []byte { return appendRandomEscaped(r, dst, s) })
}

// rewrite writes the JSON text in again, each string (key or value)
// written by str.
func rewrite(in []byte, str func(dst []byte, s string) []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var out []byte
	type frame struct {
		obj bool
		n   int // tokens written in this container
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			out = append(out, byte(d))
			continue
		}
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			switch {
			case top.obj && top.n%2 == 1:
				out = append(out, ':')
			case top.n > 0:
				out = append(out, ',')
			}
			top.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			out = append(out, byte(v))
			stack = append(stack, frame{obj: v == '{'})
		case string:
			out = str(out, v)
		case json.Number:
			out = append(out, v...)
		case bool:
			out = fmt.Append(out, v)
		case nil:
			out = append(out, "null"...)
		}
	}
}

// appendRandomEscaped appends s as a JSON string, each character escaped
// with a probability chosen for the whole string (never, sometimes,
// often or always), so some strings stay as the API server writes them.
func appendRandomEscaped(r *rand.Rand, dst []byte, s string) []byte {
	rate := []float64{0, 0.2, 0.6, 1}[r.IntN(4)]
	hex := "0123456789abcdef"
	if r.IntN(2) == 0 {
		hex = "0123456789ABCDEF"
	}
	u := func(dst []byte, c rune) []byte {
		return append(dst, '\\', 'u', hex[c>>12&0xf], hex[c>>8&0xf], hex[c>>4&0xf], hex[c&0xf])
	}
	dst = append(dst, '"')
	for _, c := range s {
		esc := r.Float64() < rate
		switch {
		case c == '"' || c == '\\':
			if esc {
				dst = u(dst, c)
			} else {
				dst = append(dst, '\\', byte(c))
			}
		case c < 0x20:
			if i := strings.IndexRune("\b\f\n\r\t", c); i >= 0 && !esc {
				dst = append(dst, '\\', "bfnrt"[i])
			} else {
				dst = u(dst, c)
			}
		case !esc:
			dst = utf8.AppendRune(dst, c)
		case c == '/' && r.IntN(2) == 0:
			dst = append(dst, '\\', '/')
		case c > 0xffff:
			hi, lo := utf16.EncodeRune(c)
			dst = u(u(dst, hi), lo)
		default:
			dst = u(dst, c)
		}
	}
	return append(dst, '"')
}

// decision is what must not change when a review is re-encoded.
type decision struct {
	err              string
	decision, reason string
	allowed          bool
	message          string
	warnings         []string
	patchOps         int
	patched          any // the object after the patch, decoded
	patchType, audit string
}

func decide(t *testing.T, e *Engine, review []byte, o Options) decision {
	t.Helper()
	out, res, err := e.Admit(nil, review, o)
	if err != nil {
		// Errors name byte offsets, which re-encoding moves.
		msg, _, _ := strings.Cut(err.Error(), " near byte")
		return decision{err: msg}
	}
	var r struct {
		Response struct {
			Allowed   bool              `json:"allowed"`
			PatchType string            `json:"patchType"`
			Warnings  []string          `json:"warnings"`
			Audit     map[string]string `json:"auditAnnotations"`
			Status    struct {
				Message string `json:"message"`
			} `json:"status"`
		} `json:"response"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("response: %v", err)
	}
	d := decision{decision: res.Decision.String(), reason: res.Reason.String(), allowed: r.Response.Allowed,
		message: r.Response.Status.Message, warnings: r.Response.Warnings, patchOps: res.PatchOps,
		patchType: r.Response.PatchType, audit: fmt.Sprint(r.Response.Audit)}
	if err := json.Unmarshal(applyResponse(t, review, out), &d.patched); err != nil {
		t.Fatal(err)
	}
	return d
}

// escapeBase is a review the escape property is checked on.
type escapeBase struct {
	name   string
	review []byte
	o      Options
}

// escapeBases are the reviews the property is checked on: every golden
// case (every decision and reason the engine has), the corpora, and
// generated Pods.
func escapeBases(t *testing.T, e *Engine) []escapeBase {
	var out []escapeBase
	for name, c := range loadGoldenCases(t) {
		out = append(out, escapeBase{"golden/" + name, c.review(t, e), Options{Profile: c.Profile}})
	}
	for _, name := range corpus.Names() {
		out = append(out, escapeBase{"corpus/" + name, corpus.Review(name), Options{}})
	}
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 40 {
		pod := genPod(r)
		uniqueNames(pod)
		out = append(out, escapeBase{fmt.Sprintf("generated/%d", i), podReview(pod, "gen"), Options{}})
	}
	return out
}

// sortedEscapeBases is escapeBases in name order, so an index names one
// base across runs (FuzzEscapedDecideAlike).
func sortedEscapeBases(t *testing.T, e *Engine) []escapeBase {
	out := escapeBases(t, e)
	slices.SortFunc(out, func(a, b escapeBase) int { return strings.Compare(a.name, b.name) })
	return out
}

// TestEscapedReviewsDecideAlike is the property: any review, re-encoded
// with randomly escaped keys and values, is decided as the review itself
// (same decision, reason, message and warnings, and a patch that makes
// the same Pod of it): the engine reads JSON as a decoder does.
func TestEscapedReviewsDecideAlike(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	r := rand.New(rand.NewPCG(1, 2))
	for _, b := range escapeBases(t, e) {
		name := b.name
		want := decide(t, e, b.review, b.o)
		for i := range 8 {
			esc, err := reencode(r, b.review)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := decide(t, e, esc, b.o); !reflect.DeepEqual(got, want) {
				t.Errorf("%s, encoding %d decides otherwise:\n got %+v\nwant %+v\nreview %.2000s", name, i, got, want, esc)
				break
			}
		}
	}
}

// TestEscapedKeysOfTheIssue: the cases issue 21 reported, each with the
// key or value spelled with escapes, decide as spelled plainly.
func TestEscapedKeysOfTheIssue(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	base := string(corpus.Review(corpus.Small))
	for _, tt := range []struct {
		name, plain, escaped string
		want                 Reason
	}{
		{"namespace key", `"namespace":"shop","operation"`, `"\u006Eamespace":"kube-system","operation"`, ReasonNamespaceExcluded},
		{"namespace value", `"namespace":"shop","operation"`, `"namespace":"kube\u002dsystem","operation"`, ReasonNamespaceExcluded},
		{"labels key", `"labels":{`, `"\u006cabels":{"graft.dev/inject":"false",`, ReasonOptedOut},
		{"label key", `"labels":{`, `"labels":{"graft.dev\/inject":"false",`, ReasonOptedOut},
		{"label value", `"labels":{`, `"labels":{"graft.dev/inject":"f\u0061lse",`, ReasonOptedOut},
		{"annotations key", `"annotations":{`, `"\u0061nnotations":{"kubernetes.io/config.mirror":"x",`, ReasonMirrorPod},
		{"container name key", `"name":"checkout-`, `"\u006eame":"graft-agent","x-name":"checkout-`, ReasonConflict},
		{"operation value", `"operation":"CREATE"`, `"operation":"UPD\u0041TE"`, ReasonOperation},
		{"kind value", `"kind":"Pod"`, `"kind":"P\u006fd"`, ReasonNone},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(base, tt.plain) {
				t.Fatalf("corpus lacks %s", tt.plain)
			}
			// A container's name is the first after the spec's start:
			// the metadata holds an ownerReference's.
			at := 0
			if tt.name == "container name key" {
				at = strings.Index(base, `"spec":`)
			}
			escaped := base[:at] + strings.Replace(base[at:], tt.plain, tt.escaped, 1)
			decoded, err := reencodePlain([]byte(escaped))
			if err != nil {
				t.Fatal(err)
			}
			got, want := decide(t, e, []byte(escaped), Options{}), decide(t, e, decoded, Options{})
			if !reflect.DeepEqual(got, want) {
				t.Errorf("escaped decides %+v\nplain decides %+v", got, want)
			}
			if got.reason != tt.want.String() {
				t.Errorf("reason %s, want %s", got.reason, tt.want)
			}
		})
	}
}

// reencodePlain writes in again without escapes but those JSON needs.
func reencodePlain(in []byte) ([]byte, error) {
	return rewrite(in, appendJSONString)
}
