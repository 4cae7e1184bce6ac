package templates

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"text/template"

	yamlv2 "go.yaml.in/yaml/v2"
)

// Parameter values are opaque to YAML. A value is text: whatever it
// holds, it must not add a key, end a scalar, open a list or comment out
// the rest of a line (issue 21: a newline and a key in an unquoted image
// added a command and an env var to the sidecar). So a fragment renders
// each string value, and each text a function derives from one, as a
// token of letters and digits that stands for it; the rendered YAML is
// parsed with the tokens in place, its structure then the template's
// alone; and only then does each token in a key or a scalar give way to
// the text it stands for. A value whose characters cannot carry YAML
// syntax anywhere renders as itself (YAML then types it, 8080 a number),
// which keeps the documents the built-in templates render byte for byte.
//
// Tokens are "GRAFTV", a kind, the text in hex and "Z":
//
//   - r stands for the text itself: a value printed as is.
//   - q stands for what Go's quoting (the quote function) writes between
//     its quotes, which quote writes around the token. A scalar that is
//     exactly the token was those quotes, read by YAML as a double-quoted
//     scalar: it is the text itself.
//   - j stands likewise for what JSON (toJson) writes between a string's
//     quotes.
//
// Functions see real values: quote, toJson and join (funcs) and
// text/template's print, printf, println, html, js and urlquery
// (textFuncs) turn the tokens they are handed back into the text they
// stand for, do their work, and hand back a text if any of it came from
// a value; eq, len, index and slice read a value's own string.

// text is the string value of a parameter, an item of a list
// parameter's, or what a function made of one. It prints as a token.
type text string

// String is what the fragment's output holds for t: t itself when its
// characters are inert, else its token.
func (t text) String() string {
	if inert(string(t)) {
		return string(t)
	}
	return token(kindRaw, string(t))
}

// inert reports whether s can carry no YAML syntax wherever it is
// written: letters, digits and ._/- only, leading with a letter, a digit
// or "_" (a leading "-" opens a list item, "---" and "..." delimit
// documents), and not empty (an empty value would leave a key without
// its scalar).
func inert(s string) bool {
	if s == "" || !isAlnum(s[0]) && s[0] != '_' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '/' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Token kinds.
const (
	kindRaw   = 'r'
	kindQuote = 'q'
	kindJSON  = 'j'
)

const (
	tokenPrefix = "GRAFTV"
	tokenEnd    = 'Z'
)

func token(kind byte, s string) string {
	return tokenPrefix + string(kind) + hex.EncodeToString([]byte(s)) + string(tokenEnd)
}

// inner is what a token of kind stands for in text: the text itself, or
// what quote or toJson writes between its quotes.
func inner(kind byte, s string) string {
	switch kind {
	case kindQuote:
		q := strconv.Quote(s)
		return q[1 : len(q)-1]
	case kindJSON:
		b, _ := json.Marshal(s) // a string always marshals
		return string(b[1 : len(b)-1])
	}
	return s
}

// nextToken finds the first token in s: its start and end, kind and
// text; ok is false when s holds none.
func nextToken(s string) (start, end int, kind byte, val string, ok bool) {
	from := 0
	for {
		i := strings.Index(s[from:], tokenPrefix)
		if i < 0 {
			return 0, 0, 0, "", false
		}
		start = from + i
		rest := s[start+len(tokenPrefix):]
		if j := strings.IndexByte(rest, tokenEnd); j > 0 && (rest[0] == kindRaw || rest[0] == kindQuote || rest[0] == kindJSON) {
			if b, err := hex.DecodeString(rest[1:j]); err == nil {
				return start, start + len(tokenPrefix) + j + 1, rest[0], string(b), true
			}
		}
		from = start + len(tokenPrefix)
	}
}

// realize replaces each token in s, text a template wrote, with what it
// stands for there; tainted reports whether s held any.
func realize(s string) (out string, tainted bool) {
	var b strings.Builder
	for {
		start, end, kind, val, ok := nextToken(s)
		if !ok {
			break
		}
		tainted = true
		b.WriteString(s[:start])
		b.WriteString(inner(kind, val))
		s = s[end:]
	}
	if !tainted {
		return s, false
	}
	b.WriteString(s)
	return b.String(), true
}

// substitute is realize for a scalar or key of the parsed document: a
// scalar that is exactly a quote or toJson token was a double-quoted
// scalar, which YAML read back to the text itself.
func substitute(s string) string {
	if start, end, kind, val, ok := nextToken(s); ok && start == 0 && end == len(s) && kind != kindRaw {
		return val
	}
	out, _ := realize(s)
	return out
}

// realArg is an argument as a function sees it: texts as strings, in
// lists and maps too (the data map), a template's own strings with their
// tokens realized; tainted reports whether any of it came from a value.
func realArg(v any) (any, bool) {
	switch x := v.(type) {
	case text:
		return string(x), true
	case []text:
		out := make([]string, len(x))
		for i, t := range x {
			out[i] = string(t)
		}
		return out, true
	case string:
		return realize(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		tainted := false
		for k, e := range x {
			var t bool
			out[k], t = realArg(e)
			tainted = tainted || t
		}
		return out, tainted
	}
	return v, false
}

// realArgs is realArg of each argument.
func realArgs(args []any) ([]any, bool) {
	out := make([]any, len(args))
	tainted := false
	for i, a := range args {
		var t bool
		out[i], t = realArg(a)
		tainted = tainted || t
	}
	return out, tainted
}

// result is what a function hands back: a text if anything it read came
// from a value.
func result(s string, tainted bool) any {
	if tainted {
		return text(s)
	}
	return s
}

// sprint is text/template's way of turning arguments into one string
// (html, js, urlquery): a lone string as is, else fmt.Sprint.
func sprint(args []any) (string, bool) {
	real, tainted := realArgs(args)
	if len(real) == 1 {
		if s, ok := real[0].(string); ok {
			return s, tainted
		}
	}
	return fmt.Sprint(real...), tainted
}

// textFuncs replace text/template's functions that write their
// arguments' text, so that they see values, not tokens.
var textFuncs = map[string]any{
	"print": func(args ...any) any {
		real, tainted := realArgs(args)
		return result(fmt.Sprint(real...), tainted)
	},
	"println": func(args ...any) any {
		real, tainted := realArgs(args)
		return result(fmt.Sprintln(real...), tainted)
	},
	"printf": func(format any, args ...any) any {
		f, ft := realArg(format)
		fs, ok := f.(string)
		if !ok {
			fs = fmt.Sprint(f)
		}
		real, tainted := realArgs(args)
		return result(fmt.Sprintf(fs, real...), ft || tainted)
	},
	"html": func(args ...any) any {
		s, tainted := sprint(args)
		return result(template.HTMLEscapeString(s), tainted)
	},
	"js": func(args ...any) any {
		s, tainted := sprint(args)
		return result(template.JSEscapeString(s), tainted)
	},
	"urlquery": func(args ...any) any {
		s, tainted := sprint(args)
		return result(url.QueryEscape(s), tainted)
	},
}

// quoteFunc is the quote function: Go's quoting of its argument's text.
func quoteFunc(v any) string {
	real, tainted := realArg(v)
	s, ok := real.(string)
	if !ok {
		s = fmt.Sprint(real)
	}
	if !tainted {
		return strconv.Quote(s)
	}
	return `"` + token(kindQuote, s) + `"`
}

// toJSONFunc is the toJson function: its argument as JSON, each string
// that came from a value a JSON token.
func toJSONFunc(v any) (string, error) {
	b, err := json.Marshal(jsonTokens(v))
	return string(b), err
}

// jsonTokens replaces in v each text, and each template string holding
// tokens, with a JSON token, recursing into lists and maps.
func jsonTokens(v any) any {
	switch x := v.(type) {
	case text:
		return token(kindJSON, string(x))
	case string:
		if s, tainted := realize(x); tainted {
			return token(kindJSON, s)
		}
		return x
	case []text:
		out := make([]string, len(x))
		for i, t := range x {
			out[i] = token(kindJSON, string(t))
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonTokens(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonTokens(e)
		}
		return out
	}
	return v
}

// joinFunc is the join function: the items of a list separated by sep.
func joinFunc(sep any, items any) (any, error) {
	s, st := realArg(sep)
	sepStr, ok := s.(string)
	if !ok {
		return nil, fmt.Errorf("join: separator %v is not a string", sep)
	}
	var parts []string
	tainted := st
	switch x := items.(type) {
	case []text:
		for _, t := range x {
			parts = append(parts, string(t))
		}
		tainted = tainted || len(x) > 0
	case []string:
		for _, it := range x {
			r, t := realize(it)
			parts = append(parts, r)
			tainted = tainted || t
		}
	default:
		return nil, fmt.Errorf("join: %v is not a list", reflect.TypeOf(items))
	}
	return result(strings.Join(parts, sepStr), tainted), nil
}

// opaqueValues is vals as the fragment sees them: strings as texts,
// lists as lists of texts.
func opaqueValues(vals map[string]any) map[string]any {
	out := make(map[string]any, len(vals))
	for k, v := range vals {
		switch x := v.(type) {
		case string:
			out[k] = text(x)
		case []string:
			items := make([]text, len(x))
			for i, it := range x {
				items[i] = text(it)
			}
			out[k] = items
		default:
			out[k] = v
		}
	}
	return out
}

// document parses rendered, a fragment rendered with tokens, and returns
// it as JSON with every token replaced by the text it stands for. It
// refuses a mapping that holds a key twice, which YAML parsers accept
// (the later wins), whether the template's text wrote it twice or two
// keys became one once their tokens were replaced.
func document(rendered []byte) ([]byte, error) {
	var doc any
	if err := yamlv2.UnmarshalStrict(rendered, &doc); err != nil {
		var te *yamlv2.TypeError
		if errors.As(err, &te) {
			for i, e := range te.Errors {
				te.Errors[i], _ = realize(e)
			}
			return nil, fmt.Errorf("%s (a mapping holds each key once)", strings.Join(te.Errors, "; "))
		}
		msg, _ := realize(err.Error())
		return nil, fmt.Errorf("not YAML: %s", msg)
	}
	out, err := jsonable(doc, "")
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// jsonable converts a document as YAML v2 decodes it into what JSON
// holds, as sigs.k8s.io/yaml does (keys as strings), replacing tokens in
// keys and strings; path names where v is, for messages.
func jsonable(v any, path string) (any, error) {
	switch x := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			key, err := keyString(k)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", orTop(path), err)
			}
			key = substitute(key)
			if _, dup := out[key]; dup {
				return nil, fmt.Errorf("%s: key %q twice (a mapping holds each key once)", orTop(path), key)
			}
			if out[key], err = jsonable(e, path+"."+key); err != nil {
				return nil, err
			}
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = jsonable(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	case string:
		return substitute(x), nil
	}
	return v, nil
}

func orTop(path string) string {
	if path == "" {
		return "the fragment"
	}
	return strings.TrimPrefix(path, ".")
}

// keyString writes a mapping key as sigs.k8s.io/yaml does.
func keyString(k any) (string, error) {
	switch x := k.(type) {
	case string:
		return x, nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 32)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		return s, nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", fmt.Errorf("key %v: a mapping key must be a string, number or boolean", k)
}
