package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/graftdev/graft/inject"
)

const revisionsYAML = `
revision: v1
defaultProfile: enabled
profiles:
  enabled: {templates: [otel-agent]}
  mesh: {templates: [mesh-proxy], podRevision: true}
revisions:
  v2:
    profiles:
      enabled: {templates: [otel-agent], params: {otel-agent: {image: "registry.local/agent:2"}}}
  v3:
    templatesDir: %s
    defaultProfile: mesh
tags:
  stable:
    revision: v1
  canary:
    split:
      - {revision: v2, percent: 10}
      - {revision: v1, percent: 90}
defaultRevision: stable
`

func TestParseRevisions(t *testing.T) {
	dir := t.TempDir()
	own := "name: otel-agent\ndescription: v3's agent\nfragment: |\n  containers:\n    - {name: mine, image: x, securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}}\n"
	if err := os.WriteFile(filepath.Join(dir, "otel-agent.yaml"), []byte(own), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Parse("graft.yaml", []byte(strings.Replace(revisionsYAML, "%s", dir, 1)))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.RevisionsConfig("")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rc.Revisions {
		names = append(names, r.Config.Revision)
	}
	if strings.Join(names, ",") != "v1,v2,v3" || rc.Default != "stable" {
		t.Fatalf("revisions %v, default %q", names, rc.Default)
	}
	v1, v2, v3 := rc.Revisions[0], rc.Revisions[1], rc.Revisions[2]
	// v2 replaces enabled and inherits mesh; v3 inherits both and has its
	// own templates and default profile.
	if got := v2.Config.Profiles["enabled"].Params["otel-agent"]["image"]; got != "registry.local/agent:2" {
		t.Errorf("v2's enabled: %+v", v2.Config.Profiles["enabled"])
	}
	if !reflect.DeepEqual(v2.Config.Profiles["mesh"], f.Profiles["mesh"]) || !v2.Config.Profiles["mesh"].PodRevision {
		t.Errorf("v2 did not inherit mesh: %+v", v2.Config.Profiles["mesh"])
	}
	if _, ok := f.Profiles["enabled"].Params["otel-agent"]; ok {
		t.Error("v2's profile leaked into the top level's")
	}
	if v3.Config.DefaultProfile != "mesh" || v2.Config.DefaultProfile != "enabled" {
		t.Errorf("default profiles: v2 %q, v3 %q", v2.Config.DefaultProfile, v3.Config.DefaultProfile)
	}
	if v2.Templates != v1.Templates {
		t.Error("v2 without templatesDir does not share the top level's templates")
	}
	if tpl, _ := v3.Templates.Get("otel-agent"); tpl.Description != "v3's agent" {
		t.Errorf("v3's templatesDir not loaded: %q", tpl.Description)
	}
	wantTags := []inject.TagConfig{
		{Name: "canary", Split: []inject.Share{{Revision: "v2", Percent: 10}, {Revision: "v1", Percent: 90}}},
		{Name: "stable", Split: []inject.Share{{Revision: "v1", Percent: 100}}},
	}
	if !reflect.DeepEqual(rc.Tags, wantTags) {
		t.Errorf("tags %+v, want %+v", rc.Tags, wantTags)
	}
	for name, want := range map[string][]string{"": {"v1"}, "canary": {"v2", "v1"}, "stable": {"v1"}, "v3": {"v3"}, "nope": nil} {
		if got := f.Targets(name); !reflect.DeepEqual(got, want) {
			t.Errorf("Targets(%q) = %v, want %v", name, got, want)
		}
	}
	// And the engine layer takes it.
	r, err := inject.NewRevisions(rc)
	if err != nil {
		t.Fatal(err)
	}
	if r.Default() != "stable" || strings.Join(r.Names(), ",") != "canary,stable,v1,v2,v3" {
		t.Errorf("NewRevisions: default %s, names %v", r.Default(), r.Names())
	}

	if _, err := f.RevisionsConfig(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing top-level templates directory was accepted")
	}
	f.Revisions["v3"] = Revision{TemplatesDir: filepath.Join(dir, "missing")}
	if _, err := f.RevisionsConfig(""); err == nil || !strings.HasPrefix(err.Error(), "revisions.v3.templatesDir: ") {
		t.Errorf("a missing revision templates directory: %v", err)
	}
}

func TestParseRevisionErrors(t *testing.T) {
	const base = "profiles:\n  enabled: {templates: [otel-agent]}\n"
	cases := []struct{ name, yaml, want string }{
		{"bad top name", "revision: V1\n",
			`graft.yaml:1: revision: "V1" is not a valid name: a lowercase RFC 1123 label must consist of`},
		{"bad revision name", base + "revisions:\n  next_1: {}\n",
			`graft.yaml:4: revisions.next_1: "next_1" is not a valid name`},
		{"revision named like the top level", base + "revisions:\n  default: {}\n",
			`graft.yaml:4: revisions.default: "default" is the top level's revision (revision: default); name this one otherwise`},
		{"new profile in a revision", base + "revisions:\n  next:\n    profiles:\n      other: {templates: [otel-agent]}\n",
			`graft.yaml:6: revisions.next.profiles.other: the top level has no profile "other"`},
		{"revision default profile", base + "revisions:\n  next:\n    defaultProfile: other\n",
			`graft.yaml:5: revisions.next.defaultProfile: no profile "other"`},
		{"revision profile field", base + "revisions:\n  next:\n    profiles:\n      enabled: {templates: [otel-agent], podRevison: true}\n",
			`graft.yaml:6: revisions.next.profiles.enabled: unknown field "podRevison" (did you mean "podRevision"?)`},
		{"tag named like a revision", base + "tags:\n  default: {revision: default}\n",
			`graft.yaml:4: tags.default: "default" is a revision: a tag needs a name of its own`},
		{"bad tag name", base + "tags:\n  Canary: {revision: default}\n",
			`graft.yaml:4: tags.Canary: "Canary" is not a valid name`},
		{"tag with neither", base + "tags:\n  canary: {}\n",
			`graft.yaml:4: tags.canary: give either revision or split`},
		{"tag with both", base + "tags:\n  canary:\n    revision: default\n    split: [{revision: default, percent: 100}]\n",
			`graft.yaml:4: tags.canary: give either revision or split`},
		{"tag of nothing", base + "revisions: {next: {}}\ntags:\n  canary:\n    revision: nope\n",
			`graft.yaml:6: tags.canary.revision: no revision "nope" (revisions: default, next)`},
		{"tag of a tag", base + "tags:\n  stable: {revision: default}\n  canary: {revision: stable}\n",
			`graft.yaml:5: tags.canary.revision: no revision "stable" (revisions: default)`},
		{"split of nothing", base + "tags:\n  canary:\n    split:\n      - {revision: default, percent: 50}\n      - {revision: nope, percent: 50}\n",
			`graft.yaml:7: tags.canary.split[1].revision: no revision "nope"`},
		{"split twice", base + "tags:\n  canary:\n    split:\n      - {revision: default, percent: 50}\n      - {revision: default, percent: 50}\n",
			`graft.yaml:7: tags.canary.split[1].revision: revision "default" is already in this split`},
		{"split percent range", base + "revisions: {next: {}}\ntags:\n  canary:\n    split:\n      - {revision: next, percent: 110}\n      - {revision: default, percent: -10}\n",
			`graft.yaml:7: tags.canary.split[0].percent: 110: want a whole percentage from 0 to 100`},
		{"split percent not whole", base + "tags:\n  canary:\n    split:\n      - {revision: default, percent: 99.5}\n",
			`graft.yaml:6: tags.canary.split[0].percent: "99.5": want a whole number`},
		{"split sum", base + "revisions: {next: {}}\ntags:\n  canary:\n    split:\n      - {revision: next, percent: 10}\n      - {revision: default, percent: 80}\n",
			`graft.yaml:6: tags.canary.split: the percentages add up to 90, want 100`},
		{"default revision", base + "defaultRevision: nope\n",
			`graft.yaml:3: defaultRevision: "nope" is neither a revision nor a tag`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("graft.yaml", []byte(tc.yaml))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error\n got %v\nwant %s", err, tc.want)
			}
			if !IsError(err) {
				t.Errorf("%T is not a config *Error", err)
			}
		})
	}
}

// TestLineAt: paths through mappings, lists and aliases; a missing part
// gives the line of the deepest part found.
func TestLineAt(t *testing.T) {
	root, err := decodeStrict("f.yaml", []byte("a:\n  b: &x\n    - {c: 1}\n    - {c: 2,\n       d: 3}\ne: *x\nf[0]: 7\n"), new(map[string]any))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path []string
		want int
	}{
		{nil, 1}, {[]string{"a"}, 1}, {[]string{"a", "b"}, 2}, {[]string{"a", "b[1]", "d"}, 5}, {[]string{"a", "b[1]"}, 4},
		{[]string{"a", "b[7]"}, 2}, {[]string{"a", "b[x]"}, 1}, {[]string{"a", "nope", "x"}, 1}, {[]string{"e[1]", "d"}, 5},
		{[]string{"f[0]"}, 7}, {[]string{"e[0][0]"}, 3},
	} {
		if got := lineAt(root, tt.path...); got != tt.want {
			t.Errorf("lineAt(%v) = %d, want %d", tt.path, got, tt.want)
		}
	}
	if lineAt(nil, "a") != 1 {
		t.Error("lineAt of an empty document")
	}
}
