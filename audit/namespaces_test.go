package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
)

// TestCheckNamespace: a namespace asking for graft whose labels select no
// webhook is reported with the reason; one graft serves, one that does not
// ask, one that says no and one graft never injects are not.
func TestCheckNamespace(t *testing.T) {
	a := New(engine(t, map[string]string{"default": newImage, "next": newImage},
		inject.TagConfig{Name: "stable", Split: []inject.Share{{Revision: "default", Percent: 100}}}))
	for _, c := range []struct {
		name   string
		labels map[string]string
		reason string // "" not reported
		detail string
	}{
		{"apps", map[string]string{names.Inject: "agent"}, "", ""},
		{"apps", map[string]string{names.Inject: "enabled", names.Revision: "stable"}, "", ""},
		{"apps", map[string]string{names.Inject: "agent", names.Revision: "next"}, "", ""},
		{"apps", nil, "", ""},
		{"apps", map[string]string{names.Revision: "defualt"}, "", ""},
		{"apps", map[string]string{names.Inject: "disabled"}, "", ""},
		{"kube-system", map[string]string{names.Inject: "mesh"}, "", ""},
		{"apps", map[string]string{names.Inject: "mesh"}, ReasonProfileUnknown,
			"graft.dev/inject=mesh names no profile (profiles: agent, hostnet, keep)"},
		{"apps", map[string]string{names.Inject: "agent", names.Revision: "defualt"}, ReasonRevisionUnknown,
			"graft.dev/rev=defualt is neither a revision nor a tag graft serves (revisions: default, next; tags: stable)"},
	} {
		r, ok := a.CheckNamespace(Namespace{Name: c.name, Labels: c.labels})
		switch {
		case c.reason == "" && ok:
			t.Errorf("%s %v: reported %+v", c.name, c.labels, r)
		case c.reason != "" && (!ok || r.Reason != c.reason || !strings.Contains(r.Detail, c.detail)):
			t.Errorf("%s %v: %+v (reported %v), want %s saying %q", c.name, c.labels, r, ok, c.reason, c.detail)
		}
	}
}

// TestReportShowsUnselectedNamespaces: every output carries them, after
// the Pods (or workloads).
func TestReportShowsUnselectedNamespaces(t *testing.T) {
	rep := NewReport(time.Unix(0, 0))
	rep.Namespaces = []NamespaceResult{{Name: "shop", Inject: "enabled", Revision: "defualt",
		Reason: ReasonRevisionUnknown, Detail: "graft.dev/rev=defualt is neither a revision nor a tag graft serves"}}
	pod := PodResult{Namespace: "apps", Name: "web", Workload: Workload{Kind: "Pod", Name: "web"}, Verdict: Verdict{Class: Current}}
	rep.Add(&pod)
	out := map[string]*bytes.Buffer{}
	for _, format := range []string{"table", "json", "prometheus"} {
		for _, workloads := range []bool{false, true} {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, format, workloads, rep.Time)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Pod(&pod); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(rep); err != nil {
				t.Fatal(err)
			}
			if !workloads {
				out[format] = &buf
			} else if format == "table" && !strings.Contains(buf.String(), "revision-unknown") {
				t.Errorf("table by workload lacks the namespaces:\n%s", buf.String())
			}
		}
	}
	table := out["table"].String()
	for _, want := range []string{"Namespaces whose labels select no webhook of graft:", "shop", "graft.dev/inject=enabled,graft.dev/rev=defualt",
		"revision-unknown", "is neither a revision nor a tag"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Index(table, "apps") > strings.Index(table, "shop") {
		t.Errorf("table lists the namespaces before the Pods:\n%s", table)
	}
	var got struct {
		Pods       []json.RawMessage `json:"pods"`
		Namespaces []NamespaceResult `json:"namespaces"`
	}
	if err := json.Unmarshal(out["json"].Bytes(), &got); err != nil || len(got.Pods) != 1 || len(got.Namespaces) != 1 || got.Namespaces[0] != rep.Namespaces[0] {
		t.Errorf("json pods %d, namespaces %+v (%v), want 1 Pod and %+v:\n%s", len(got.Pods), got.Namespaces, err, rep.Namespaces, out["json"])
	}
	if want := `graft_audit_unselected_namespaces{namespace="shop",reason="revision-unknown"} 1`; !strings.Contains(out["prometheus"].String(), want) {
		t.Errorf("prometheus output lacks %s:\n%s", want, out["prometheus"])
	}
}

// TestReportWithoutUnselectedNamespaces: none to tell, nothing said but
// an empty list where the schema has one.
func TestReportWithoutUnselectedNamespaces(t *testing.T) {
	rep := NewReport(time.Unix(0, 0))
	for _, format := range []string{"table", "json", "prometheus"} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, format, false, rep.Time)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(rep); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(buf.String(), "select no webhook") || strings.Contains(buf.String(), "unselected") {
			t.Errorf("%s output tells of namespaces with none:\n%s", format, buf.String())
		}
		if format == "json" && !strings.Contains(buf.String(), `"namespaces": []`) {
			t.Errorf("json output lacks an empty namespaces list:\n%s", buf.String())
		}
	}
}
