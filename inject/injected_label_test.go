package inject

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/graftdev/graft/internal/names"
)

// TestInjectedLabel: every Pod graft injects carries graft.dev/injected
// with the resolved revision, recorded under the first template the
// request injects; a Pod that already carries that value is not patched
// for it, another value is replaced, and a request that injects nothing
// sets nothing.
func TestInjectedLabel(t *testing.T) {
	cfg := goldenConfig()
	rev := cfg
	rev.Revision = "2026-12"
	e, eRev := newTestEngine(t, cfg), newTestEngine(t, rev)
	withLabel := func(v string) func(map[string]any) {
		return func(p map[string]any) {
			p["metadata"].(map[string]any)["labels"] = map[string]any{"app": "web", names.Injected: v}
		}
	}
	tests := []struct {
		name    string
		e       *Engine
		profile string
		pod     func(map[string]any)
		// first, when set, injects the Pod before e admits it.
		first *Engine
		// want is the label's value after admission ("": absent), by is
		// the template whose status entry records it ("": none).
		want, by string
		// patched: the response patches the label.
		patched bool
	}{
		{name: "fresh Pod", e: e, profile: "agent", want: "default", by: "agent", patched: true},
		{name: "the engine's revision", e: eRev, profile: "agent", want: "2026-12", by: "agent", patched: true},
		{name: "already carried", e: e, profile: "agent", pod: withLabel("default"), want: "default"},
		{name: "another revision's value", e: e, profile: "agent", pod: withLabel("2026-11"), want: "default", by: "agent", patched: true},
		{name: "upgraded from another revision", e: e, profile: "agent", first: eRev, want: "default", by: "agent", patched: true},
		{name: "first template left out: the next records it", e: e, profile: "keep-otel-agent-log-shipper",
			pod: func(p map[string]any) {
				appendTo(p, "initContainers", map[string]any{"name": "graft-otel-agent", "image": "mine:1"})
			}, want: "default", by: "log-shipper", patched: true},
		{name: "every template left out", e: e, profile: "keep",
			pod: func(p map[string]any) {
				appendTo(p, "containers", map[string]any{"name": "graft-agent", "image": "mine:1"})
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			review := podReview(twoContainerPod(tt.pod), "label")
			o := Options{Profile: tt.profile}
			if tt.first != nil {
				review = podReview(json.RawMessage(applyResponse(t, review, mustAdmit(t, tt.first, review, o))), "label")
			}
			resp := mustAdmit(t, tt.e, review, o)
			var ops []struct{ Op, Path string }
			if p := responsePatch(t, resp); p != nil {
				if err := json.Unmarshal(p, &ops); err != nil {
					t.Fatal(err)
				}
			}
			patched := slices.ContainsFunc(ops, func(op struct{ Op, Path string }) bool {
				return op.Path == "/metadata/labels/graft.dev~1injected" || op.Path == "/metadata/labels"
			})
			if patched != tt.patched {
				t.Errorf("patches the label: %v, want %v (%+v)", patched, tt.patched, ops)
			}
			pod := decodeGeneric(t, applyResponse(t, review, resp))
			meta := pod["metadata"].(map[string]any)
			labels, _ := meta["labels"].(map[string]any)
			if got, _ := labels[names.Injected].(string); got != tt.want {
				t.Errorf("%s = %q, want %q", names.Injected, got, tt.want)
			}
			var by []string
			if raw, ok := meta["annotations"].(map[string]any)[names.Status].(string); ok {
				st, err := ParseStatus(raw)
				if err != nil {
					t.Fatal(err)
				}
				for _, ts := range st.Templates {
					if slices.Contains(ts.Labels, names.Injected) {
						by = append(by, ts.Name)
					}
				}
			}
			if want := []string{tt.by}; tt.by == "" && len(by) != 0 || tt.by != "" && !slices.Equal(by, want) {
				t.Errorf("recorded by %v, want %q", by, tt.by)
			}
			final, _ := json.Marshal(pod)
			if p := responsePatch(t, mustAdmit(t, tt.e, podReview(json.RawMessage(final), "again"), o)); p != nil {
				t.Errorf("the second call patches: %s", p)
			}
		})
	}
}
