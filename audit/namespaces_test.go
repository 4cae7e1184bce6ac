package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

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

// TestReportShowsUnselectedNamespaces: every output carries them.
func TestReportShowsUnselectedNamespaces(t *testing.T) {
	rep := &Report{Namespaces: []NamespaceResult{{Name: "shop", Inject: "enabled", Revision: "defualt",
		Reason: ReasonRevisionUnknown, Detail: "graft.dev/rev=defualt is neither a revision nor a tag graft serves"}}}
	var table, js, prom bytes.Buffer
	if err := rep.WriteTable(&table, false); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := rep.WritePrometheus(&prom); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Namespaces whose labels select no webhook of graft:", "shop", "graft.dev/inject=enabled,graft.dev/rev=defualt",
		"revision-unknown", "is neither a revision nor a tag"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var got struct {
		Namespaces []NamespaceResult `json:"namespaces"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || len(got.Namespaces) != 1 || got.Namespaces[0] != rep.Namespaces[0] {
		t.Errorf("json namespaces %+v (%v), want %+v", got.Namespaces, err, rep.Namespaces)
	}
	if want := `graft_audit_unselected_namespaces{namespace="shop",reason="revision-unknown"} 1`; !strings.Contains(prom.String(), want) {
		t.Errorf("prometheus output lacks %s:\n%s", want, prom.String())
	}
}
