package inject

import (
	"encoding/json"
	"maps"
	"testing"
)

func TestReadLimitDefaults(t *testing.T) {
	spec := `{"initContainers":[{"name":"setup","resources":{"limits":{"ephemeral-storage":"2Gi"}}}],
		"containers":[
		{"name":"app","resources":{"requests":{"cpu":"100m","ephemeral-storage":"1Gi"},"limits":{"cpu":"1"}}},
		{"name":"worker","resources":{"requests":{"memory":"64Mi"},"limits":{"memory":"128Mi"}}}]}`
	cases := []struct {
		name, annotation string
		requests, limits map[string]string
	}{
		{"requests and limits, containers and init containers",
			`LimitRanger plugin set: cpu, ephemeral-storage request for container app; cpu limit for container app; memory request for container worker; ephemeral-storage limit for init container setup`,
			map[string]string{"cpu": `"100m"`, "ephemeral-storage": `"1Gi"`, "memory": `"64Mi"`},
			map[string]string{"cpu": `"1"`, "ephemeral-storage": `"2Gi"`}},
		{"a container the record names but the Pod lacks", `LimitRanger plugin set: cpu request for container gone`, map[string]string{}, map[string]string{}},
		{"a resource the container lacks", `LimitRanger plugin set: memory limit for container app`, map[string]string{}, map[string]string{}},
		{"init container named as a container", `LimitRanger plugin set: ephemeral-storage limit for container setup`, map[string]string{}, map[string]string{}},
		{"not LimitRanger's record", `set by hand: cpu request for container app`, map[string]string{}, map[string]string{}},
		{"garbage entries", `LimitRanger plugin set: ; cpu; request for; cpu request for pod app`, map[string]string{}, map[string]string{}},
		{"escaped", `LimitRanger plugin set: cpu request for container \u0061pp`, map[string]string{"cpu": `"100m"`}, map[string]string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &pod{spec: spec}
			d := readLimitDefaults(p, c.annotation)
			if got := asStrings(d.requests); !maps.Equal(got, c.requests) {
				t.Errorf("requests %v, want %v", got, c.requests)
			}
			if got := asStrings(d.limits); !maps.Equal(got, c.limits) {
				t.Errorf("limits %v, want %v", got, c.limits)
			}
		})
	}
}

func asStrings(m map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// TestLimitDefaultsApply pins what graft adds to its own container: what
// LimitRanger would set after the API server has defaulted requests from
// limits, and nothing when it cannot know all of it.
func TestLimitDefaultsApply(t *testing.T) {
	es := "ephemeral-storage"
	both := limitDefaults{requests: map[string]json.RawMessage{es: []byte(`"1Gi"`)}, limits: map[string]json.RawMessage{es: []byte(`"2Gi"`)}}
	reqOnly := limitDefaults{requests: map[string]json.RawMessage{es: []byte(`"1Gi"`)}, limits: map[string]json.RawMessage{}}
	limOnly := limitDefaults{requests: map[string]json.RawMessage{}, limits: map[string]json.RawMessage{es: []byte(`"2Gi"`)}}
	cases := []struct {
		name string
		d    limitDefaults
		raw  string
		want string // "" means unchanged
	}{
		{"no resources", both, `{"name":"c"}`, `{"name":"c","resources":{"limits":{"ephemeral-storage":"2Gi"},"requests":{"ephemeral-storage":"1Gi"}}}`},
		{"null resources", both, `{"name":"c","resources":null}`, `{"name":"c","resources":{"limits":{"ephemeral-storage":"2Gi"},"requests":{"ephemeral-storage":"1Gi"}}}`},
		{"other resources kept, numbers kept", both, `{"n":1e3,"name":"c","resources":{"limits":{"cpu":"1"},"requests":{"cpu":"0.25"}}}`,
			`{"n":1e3,"name":"c","resources":{"limits":{"cpu":"1","ephemeral-storage":"2Gi"},"requests":{"cpu":"0.25","ephemeral-storage":"1Gi"}}}`},
		{"has the limit: its request is defaulted from it", both, `{"name":"c","resources":{"limits":{"ephemeral-storage":"4Gi"}}}`, ""},
		{"has the request: only the limit", both, `{"name":"c","resources":{"requests":{"ephemeral-storage":"512Mi"}}}`,
			`{"name":"c","resources":{"limits":{"ephemeral-storage":"2Gi"},"requests":{"ephemeral-storage":"512Mi"}}}`},
		{"has both", both, `{"name":"c","resources":{"limits":{"ephemeral-storage":"4Gi"},"requests":{"ephemeral-storage":"512Mi"}}}`, ""},
		{"request default only", reqOnly, `{"name":"c"}`, `{"name":"c","resources":{"requests":{"ephemeral-storage":"1Gi"}}}`},
		{"limit default, request unknown: nothing", limOnly, `{"name":"c"}`, ""},
		{"limit default, request present", limOnly, `{"name":"c","resources":{"requests":{"ephemeral-storage":"1Gi"}}}`,
			`{"name":"c","resources":{"limits":{"ephemeral-storage":"2Gi"},"requests":{"ephemeral-storage":"1Gi"}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, changed := c.d.apply([]byte(c.raw))
			want := c.want
			if want == "" {
				want = c.raw
			}
			if changed != (c.want != "") || string(got) != want {
				t.Fatalf("changed %v\ngot  %s\nwant %s", changed, got, want)
			}
		})
	}
}
