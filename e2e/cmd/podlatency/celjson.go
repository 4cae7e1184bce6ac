package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// celJSON writes JSON as a CEL literal of maps (values wrapped in dyn) and
// lists. A
// MutatingAdmissionPolicy on kube-apiserver 1.36.3 panics converting a
// list of typed objects (Object.spec...{...}) in a JSONPatch value, so the
// agent goes in as plain maps.
func celJSON(raw []byte) (string, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	var b strings.Builder
	if err := celAny(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

func celAny(b *strings.Builder, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		b.WriteString(strconv.Quote(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		if _, err := v.Int64(); err != nil {
			return fmt.Errorf("cel: number %s: only integers here", v)
		}
		b.WriteString(v.String())
	case []any:
		b.WriteString("[")
		for i, x := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := celAny(b, x); err != nil {
				return err
			}
		}
		b.WriteString("]")
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			// dyn: CEL map literals must otherwise have values of one type.
			b.WriteString(strconv.Quote(k) + ": dyn(")
			if err := celAny(b, v[k]); err != nil {
				return err
			}
			b.WriteString(")")
		}
		b.WriteString("}")
	default:
		return fmt.Errorf("cel: unexpected %T", v)
	}
	return nil
}
