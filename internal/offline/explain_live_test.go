package offline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/internal/names"
)

// livePod is a Pod as internal/live hands it over: its JSON and the
// fields audit reads first.
func livePod(t *testing.T, name string, labels map[string]string) audit.Pod {
	t.Helper()
	raw, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "shop", "labels": labels},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.invalid/app:1"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return audit.Pod{Namespace: "shop", Name: name, Labels: labels, Containers: []string{"app"}, JSON: raw}
}

// Live explain of a workload: the patch's paths are the workload's, and
// it says which of the workload's Pods differ from what graft would
// inject, in audit's words; of a Pod, its own audit class.
func TestExplainFromCluster(t *testing.T) {
	engine, err := NewEngine("", "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	ns := audit.Namespace{Name: "shop", Labels: map[string]string{names.Inject: names.EnabledValue}}
	many := make([]audit.Pod, 0, maxDiffering+3)
	for i := range maxDiffering + 3 {
		many = append(many, livePod(t, fmt.Sprintf("big-%02d", i), nil))
	}
	tests := []struct {
		name     string
		obj      LiveObject
		pods     []audit.Pod
		path     string // every op's path starts so
		text     []string
		notText  []string
		classes  map[string]string // Pod: class, in -o json
		podAudit string            // a Pod's own audit class
	}{
		{name: "deployment", obj: LiveObject{Ref: "deployment/web", Template: "/spec/template"},
			pods: []audit.Pod{livePod(t, "web-a", nil), livePod(t, "web-b", map[string]string{names.Inject: names.OptOutValue})},
			path: "/spec/template/",
			text: []string{"deployment/web in namespace shop (read from the cluster)", "pods:       2 (missing 1, opted-out 1)",
				"pods that differ from what graft would inject now:", "    - web-a: missing ("},
			notText: []string{"- web-b"},
			classes: map[string]string{"web-a": "missing", "web-b": "opted-out"}},
		{name: "cronjob", obj: LiveObject{Ref: "cronjob/nightly", Template: "/spec/jobTemplate/spec/template"},
			path: "/spec/jobTemplate/spec/template/", text: []string{"pods:       none"}, notText: []string{"differ"}, classes: map[string]string{}},
		{name: "many Pods", obj: LiveObject{Ref: "statefulset/big", Template: "/spec/template"}, pods: many,
			path: "/spec/template/", text: []string{"pods:       23 (missing 23)", "- big-19: missing", "... and 3 more (-o json lists every Pod)"},
			notText: []string{"- big-20"}},
		{name: "pod", obj: LiveObject{Ref: "pod/web-a"}, path: "/", text: []string{"audit:      missing"}, notText: []string{"pods:"},
			podAudit: "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := tt.obj
			if tt.podAudit == "" {
				obj.Pods = func(each func(audit.Pod) error) error {
					for _, p := range tt.pods {
						if err := each(p); err != nil {
							return err
						}
					}
					return nil
				}
			}
			ex, err := ExplainFromCluster(engine, ns, livePod(t, "", map[string]string{"app": "web"}), obj)
			if err != nil {
				t.Fatal(err)
			}
			if ex.Decision != "inject" || len(ex.Patch) == 0 {
				t.Fatalf("decision %s with %d ops, want inject with a patch", ex.Decision, len(ex.Patch))
			}
			for _, op := range ex.Patch {
				if !strings.HasPrefix(op.Path, tt.path) || strings.HasPrefix(op.Path, tt.path+"spec/template") {
					t.Errorf("op %s %s: want a path under %s", op.Op, op.Path, tt.path)
				}
			}
			var text bytes.Buffer
			if err := WriteExplanation(&text, ex, false); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.text {
				if !strings.Contains(text.String(), w) {
					t.Errorf("text does not say %q:\n%s", w, text.String())
				}
			}
			for _, w := range tt.notText {
				if strings.Contains(text.String(), w) {
					t.Errorf("text says %q:\n%s", w, text.String())
				}
			}
			if tt.podAudit != "" {
				if ex.Audit == nil || ex.Audit.Class != tt.podAudit || ex.Pods != nil {
					t.Errorf("a Pod's audit %+v and Pods %v; want class %s and no Pods", ex.Audit, ex.Pods, tt.podAudit)
				}
				return
			}
			if ex.Audit != nil || len(ex.Pods) != len(tt.pods) {
				t.Errorf("audit %+v, %d Pods; want no audit of its own and %d Pods", ex.Audit, len(ex.Pods), len(tt.pods))
			}
			var js struct {
				Pods []struct{ Name, Class string } `json:"pods"`
			}
			var out bytes.Buffer
			if err := WriteExplanation(&out, ex, true); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out.Bytes(), &js); err != nil {
				t.Fatal(err)
			}
			for _, p := range js.Pods {
				if want, ok := tt.classes[p.Name]; ok && p.Class != want {
					t.Errorf("-o json: %s is %s, want %s", p.Name, p.Class, want)
				}
			}
			if tt.classes != nil && len(js.Pods) != len(tt.classes) {
				t.Errorf("-o json lists %d Pods, want %d", len(js.Pods), len(tt.classes))
			}
		})
	}
}
