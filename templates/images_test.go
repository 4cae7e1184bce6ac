package templates_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/graftdev/graft/templates"
)

// imagesDoc is the one list of the built-in templates' default images.
const imagesDoc = "../docs/reference/images.md"

// imageRow is `| template | parameter | default image | ...`.
var imageRow = regexp.MustCompile("^\\| ([a-z-]+) \\| `([A-Za-z]+)` \\| `([^`]+)` \\|")

// TestDefaultImagesListed: every image parameter of every built-in
// template defaults to the image docs/reference/images.md lists for it,
// and the list names nothing else.
func TestDefaultImagesListed(t *testing.T) {
	doc, err := os.ReadFile(imagesDoc)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`Checked on\s+\*\*\d{4}-\d{2}-\d{2}\*\*`).Match(doc) {
		t.Errorf("%s does not say when its versions were checked", imagesDoc)
	}
	listed := map[string]string{} // template/parameter -> image
	for _, line := range strings.Split(string(doc), "\n") {
		if m := imageRow.FindStringSubmatch(line); m != nil {
			listed[m[1]+"/"+m[2]] = m[3]
		}
	}
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{}
	for _, name := range set.Names() {
		tpl, _ := set.Get(name)
		for _, p := range tpl.Params {
			if p.Type == templates.TypeString && (p.Name == "image" || strings.HasSuffix(p.Name, "Image")) {
				defaults[name+"/"+p.Name] = p.Default
			}
		}
	}
	for key, img := range defaults {
		if got, ok := listed[key]; !ok {
			t.Errorf("%s defaults to %s, which %s does not list", key, img, imagesDoc)
		} else if got != img {
			t.Errorf("%s defaults to %s; %s lists %s", key, img, imagesDoc, got)
		}
	}
	for key := range listed {
		if _, ok := defaults[key]; !ok {
			t.Errorf("%s lists %s, which no built-in template has", imagesDoc, key)
		}
	}
}

// TestProxyInitIsGraftsRelease: the proxy-init image is graft's own, at
// the release deploy/ installs, so the redirection and the webhook that
// asks for it come from one build.
func TestProxyInitIsGraftsRelease(t *testing.T) {
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	tpl, _ := set.Get("mesh-proxy")
	p, ok := tpl.Param("proxyInitImage")
	if !ok {
		t.Fatal("mesh-proxy has no proxyInitImage")
	}
	chart, err := os.ReadFile("../deploy/helm/graft/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^appVersion:\s*"?([^"\s]+)"?`).FindSubmatch(chart)
	if m == nil {
		t.Fatal("no appVersion in the chart")
	}
	want := "ghcr.io/graftdev/graft:" + string(m[1])
	if p.Default != want {
		t.Errorf("proxyInitImage defaults to %s, want graft's release %s", p.Default, want)
	}
	kust, err := os.ReadFile("../deploy/base/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Fields(string(kust)), string(m[1])) {
		t.Errorf("deploy/base does not install graft %s", m[1])
	}
}
