package refdocs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// ChartSchema is the Helm chart's values schema, relative to the
// repository: its hand-written parts stay, and its config property is the
// configuration file's schema generated here.
const ChartSchema = "deploy/helm/graft/values.schema.json"

// durationPattern matches what time.ParseDuration accepts.
const durationPattern = `^(0|-?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

// dnsLabelPattern matches a DNS-1123 label: what a label value, a webhook
// name's first part and a URL path segment all accept.
const dnsLabelPattern = `^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`

// schema is the JSON schema (draft-07) of values of n's shape.
func schema(n *node) map[string]any {
	s := map[string]any{}
	switch n.kind {
	case kindString:
		s["type"] = "string"
		if len(n.enum) > 0 {
			vals := make([]any, len(n.enum))
			for i, c := range n.enum {
				vals[i] = c.Value
			}
			s["enum"] = vals
		}
	case kindBool:
		s["type"] = "boolean"
	case kindInt:
		s["type"] = "integer"
	case kindNumber:
		s["type"] = "number"
	case kindDuration:
		s["type"] = "string"
		s["pattern"] = durationPattern
	case kindObject:
		s["type"] = "object"
	case kindList:
		s["type"] = "array"
		s["items"] = schema(n.elem)
	case kindMap:
		s["type"] = "object"
		s["additionalProperties"] = schema(n.elem)
	case kindStruct:
		s["type"] = "object"
		s["additionalProperties"] = false
		props := map[string]any{}
		for _, f := range n.fields {
			p := schema(f.node)
			p["description"] = f.doc
			props[f.name] = p
		}
		s["properties"] = props
	}
	return s
}

// chartSchema returns the chart's values schema with its config property
// generated from the configuration file's types.
func chartSchema(root string) ([]byte, error) {
	path := filepath.Join(root, ChartSchema)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("refdocs: %w", err)
	}
	var values map[string]any
	if err := json.Unmarshal(data, &values); err != nil {
		return nil, fmt.Errorf("refdocs: %s: %w", ChartSchema, err)
	}
	props, ok := values["properties"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("refdocs: %s has no properties", ChartSchema)
	}
	// The chart writes apiVersion and kind itself.
	n, _, err := configNode(root, "apiVersion", "kind")
	if err != nil {
		return nil, err
	}
	cfg := schema(n)
	cfg["description"] = "graft's configuration file (docs/reference/configuration.md); generated from its Go types."
	// In the chart a profile's name is also a namespace label value, the
	// first part of its webhook's name and a path segment of its URL.
	if p, ok := cfg["properties"].(map[string]any)["profiles"].(map[string]any); ok {
		p["propertyNames"] = map[string]any{"pattern": dnsLabelPattern}
	}
	props["config"] = cfg
	values["allOf"] = chartRules()
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(values); err != nil {
		return nil, fmt.Errorf("refdocs: %w", err)
	}
	return out.Bytes(), nil
}

// chartRules are the chart's rules between values, which a property's
// own schema cannot say.
//
// A PodDisruptionBudget whose minAvailable is not below the replicas
// lets no eviction through, so every node drain that meets a graft Pod
// stalls until someone deletes the Pod by hand. With one replica the only
// budget that lets a drain through is minAvailable 0, so replicas below 2
// require it. JSON schema cannot compare two values, so the general case
// (minAvailable >= replicas, as a number or a percentage) is refused by
// the chart's templates (poddisruptionbudget.yaml).
func chartRules() []any {
	return []any{
		map[string]any{
			"description": "replicas below 2 take podDisruptionBudget.minAvailable 0: any other budget blocks every node drain.",
			"if": map[string]any{
				"properties": map[string]any{"replicas": map[string]any{"maximum": 1}},
				"required":   []any{"replicas"},
			},
			"then": map[string]any{
				"properties": map[string]any{"podDisruptionBudget": map[string]any{
					"properties": map[string]any{"minAvailable": map[string]any{"enum": []any{0, "0%"}}},
				}},
			},
		},
	}
}
