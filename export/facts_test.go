package export

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/graftdev/graft/templates"
)

func mustTemplate(t *testing.T, src string) *templates.Template {
	t.Helper()
	tmpl, err := templates.Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// TestFactsOfBuiltins: the built-in templates' containers, kinds and
// images as the guarantee reads them.
func TestFactsOfBuiltins(t *testing.T) {
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	mesh, _ := set.Get("mesh-proxy")
	f, err := Facts(mesh)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*ContainerFacts{
		// The image parameter's value, whatever it is.
		"graft-proxy": {Kinds: []string{kindNative}, ImageParams: []string{"image"}},
		// Only with trafficRedirect: init-container, which is where the
		// facts see that its image is parameter proxyInitImage.
		"graft-proxy-init": {Kinds: []string{kindInit}, ImageParams: []string{"proxyInitImage"}},
	}
	if !reflect.DeepEqual(f.Containers, want) {
		t.Errorf("mesh-proxy: %s, want %s", mustJSONString(t, f.Containers), mustJSONString(t, want))
	}
	if got := f.ImageDefaults["proxyInitImage"]; got != defaultOf(mesh, "proxyInitImage") {
		t.Errorf("mesh-proxy: proxyInitImage's default in the facts is %q, want the template's %q", got, defaultOf(mesh, "proxyInitImage"))
	}
	for _, name := range set.Names() {
		tmpl, _ := set.Get(name)
		f, err := Facts(tmpl)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for c, cf := range f.Containers {
			if len(cf.Kinds) == 0 || len(cf.Images)+len(cf.ImageParams) == 0 && !cf.ImageFollows {
				t.Errorf("%s: container %s: %+v", name, c, cf)
			}
		}
	}
}

// TestFactsFollowParameters: a container present for some values only is
// found, and what its image follows is read where it is present; an image
// built from a parameter follows it; a container named after a parameter
// a Pod may set cannot be checked and is refused.
func TestFactsFollowParameters(t *testing.T) {
	const head = "name: t\ndescription: test\n"
	f, err := Facts(mustTemplate(t, head+`parameters:
  - {name: extra, type: bool, default: "false"}
  - {name: tag, type: string, default: "1.0", pattern: '^[0-9.]+$'}
fragment: |
  containers:
    - name: main
      image: "registry.example/main:{{ .tag }}"
  {{- if .extra }}
    - name: extra
      image: registry.example/extra:1
  {{- end }}
`))
	if err != nil {
		t.Fatal(err)
	}
	if cf := f.Containers["extra"]; cf == nil || !reflect.DeepEqual(cf.Images, []string{"registry.example/extra:1"}) {
		t.Errorf("extra: %+v", cf)
	}
	if cf := f.Containers["main"]; cf == nil || !cf.ImageFollows || len(cf.ImageParams) != 0 {
		t.Errorf("main: %+v, want its image to follow tag", cf)
	}
	// A container only some values of an enum add, its image a
	// parameter's: the probe sees it where it is rendered. An image chosen
	// between a parameter and a fixed one by a bool is both.
	f, err = Facts(mustTemplate(t, head+`parameters:
  - {name: mode, type: enum, default: "off", values: ["off", "on"]}
  - {name: pinned, type: bool, default: "false"}
  - {name: initImage, type: string, format: image, default: registry.example/init:1}
fragment: |
  containers:
    - name: main
      image: registry.example/main:1
  {{- if eq .mode "on" }}
  initContainers:
    - name: init
      image: {{ if .pinned }}registry.example/pinned:1{{ else }}{{ .initImage | quote }}{{ end }}
  {{- end }}
`))
	if err != nil {
		t.Fatal(err)
	}
	if cf, want := f.Containers["init"], (&ContainerFacts{Kinds: []string{kindInit}, Images: []string{"registry.example/pinned:1"}, ImageParams: []string{"initImage"}}); !reflect.DeepEqual(cf, want) {
		t.Errorf("init: %s, want %s", mustJSONString(t, cf), mustJSONString(t, want))
	}
	_, err = Facts(mustTemplate(t, head+`parameters:
  - {name: suffix, type: string, default: "a", pattern: '^[a-z]+$'}
fragment: |
  containers:
    - name: "sidecar-{{ .suffix }}"
      image: registry.example/s:1
`))
	if err == nil || !strings.Contains(err.Error(), "the name of container") {
		t.Errorf("a container named after a parameter: %v", err)
	}
}

func mustJSONString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
