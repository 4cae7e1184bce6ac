package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/internal/ociimage/graftimage"
	"github.com/graftdev/graft/templates"
)

// publishers are the repositories a default of graft may name, and who
// builds each: graft's own image, which `make images` builds, and the
// sidecar programs' images, published by their projects. A default
// naming anything else would send a platform team to an image nobody
// makes.
var publishers = map[string]string{
	graftimage.Repository:                            "graft (make images)",
	"docker.io/envoyproxy/envoy":                     "the Envoy project",
	"docker.io/otel/opentelemetry-collector":         "the OpenTelemetry project",
	"docker.io/otel/opentelemetry-collector-contrib": "the OpenTelemetry project",
	"docker.io/otel/opentelemetry-collector-k8s":     "the OpenTelemetry project",
	"docker.io/hashicorp/vault":                      "HashiCorp",
	"cr.fluentbit.io/fluent/fluent-bit":              "the Fluent Bit project",
}

// userImage: the examples' own workloads name images under the reserved
// .example domain, standing for the user's registry; they are not
// defaults of graft's.
func userImage(ref string) bool {
	host, _, _ := strings.Cut(ref, "/")
	return strings.HasSuffix(host, ".example")
}

// repository is an image reference without its tag or digest.
func repository(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref = ref[:i]
	}
	return ref
}

// TestDefaultImagesArePublished: every image a built-in template renders
// (with its defaults, and with each enum and bool parameter at each of
// its values), and every image named in deploy/ (manifests, profiles'
// parameters, kustomizations' images, and the Helm chart as each of its
// ci/ values renders it) is graft's own or a publisher's. Graft's own
// image as a template's default (mesh-proxy's proxy-init) is the release
// the chart installs, as TestImageNamesAgree holds deploy/ to it: a
// template naming another would run a proxy-init of another release.
func TestDefaultImagesArePublished(t *testing.T) {
	found := map[string][]string{} // image -> where
	add := func(image, where string) { found[image] = append(found[image], where) }

	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range set.Names() {
		tpl, _ := set.Get(name)
		variants := []map[string]string{nil}
		for _, p := range tpl.Params {
			switch p.Type {
			case templates.TypeEnum:
				for _, v := range p.Values {
					variants = append(variants, map[string]string{p.Name: v})
				}
			case templates.TypeBool:
				variants = append(variants, map[string]string{p.Name: "true"}, map[string]string{p.Name: "false"})
			}
		}
		for _, v := range variants {
			f, err := tpl.Render(v)
			if err != nil {
				t.Fatalf("template %s with %v: %v", name, v, err)
			}
			for _, el := range append(slices.Clone(f.InitContainers), f.Containers...) {
				var c struct {
					Image string `json:"image"`
				}
				if err := json.Unmarshal(el.Raw, &c); err != nil {
					t.Fatal(err)
				}
				add(c.Image, "template "+name)
			}
		}
	}

	// Placeholders a kustomization's images: rename are not references.
	placeholders := map[string]bool{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || path == filepath.Join(chartDir, "templates")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := yamlutil.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var doc any
			if err := dec.Decode(&doc); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			walkImages(doc, func(image string) { add(image, path) }, placeholders)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	h := newHelm(t)
	for _, v := range chartVariants(t, "") {
		for _, obj := range h.render(t, v.args...) {
			var doc any
			if err := yaml.Unmarshal(obj.yaml, &doc); err != nil {
				t.Fatal(err)
			}
			walkImages(doc, func(image string) { add(image, "chart ("+v.name+") "+obj.kind+" "+obj.name) }, nil)
		}
	}

	if len(found) == 0 {
		t.Fatal("no image found: the walk is broken")
	}
	own := graftimage.Repository + ":" + chartAppVersion(t)
	if !slices.Contains(found[own], "template mesh-proxy") {
		t.Errorf("template mesh-proxy (trafficRedirect init-container) does not run graft's %s as its proxy-init; it runs images %v", own, slices.Sorted(maps.Keys(found)))
	}
	for image, where := range found {
		if placeholders[image] || userImage(image) {
			continue
		}
		at := strings.Join(slices.Compact(where), ", ")
		if _, ok := publishers[repository(image)]; !ok {
			t.Errorf("%s (in %s) is neither graft's image nor a publisher's: %v", image, at, publisherList())
		}
		if repository(image) == graftimage.Repository && image != own && slices.ContainsFunc(where, func(w string) bool { return strings.HasPrefix(w, "template ") }) {
			t.Errorf("%s (in %s) is graft's image at another release than the chart's %s", image, at, own)
		}
	}
}

// chartAppVersion is the graft release the chart installs.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	chart, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(chart, &c); err != nil || c.AppVersion == "" {
		t.Fatalf("Chart.yaml: appVersion %q, %v", c.AppVersion, err)
	}
	return c.AppVersion
}

// walkImages calls f with every string under a key "image" in doc, and
// with each kustomization images: entry's newName:newTag, recording its
// name as a placeholder.
func walkImages(doc any, f func(string), placeholders map[string]bool) {
	switch v := doc.(type) {
	case map[string]any:
		if imgs, ok := v["images"].([]any); ok && (v["kind"] == "Kustomization" || v["kind"] == "Component") {
			for _, i := range imgs {
				m, _ := i.(map[string]any)
				name, _ := m["name"].(string)
				newName, _ := m["newName"].(string)
				newTag, _ := m["newTag"].(string)
				if placeholders != nil && name != "" {
					placeholders[name] = true
				}
				if newName != "" {
					f(newName + ":" + newTag)
				}
			}
		}
		for k, child := range v {
			if s, ok := child.(string); ok && k == "image" {
				f(s)
				continue
			}
			walkImages(child, f, placeholders)
		}
	case []any:
		for _, child := range v {
			walkImages(child, f, placeholders)
		}
	}
}

func publisherList() string {
	var out []string
	for repo, who := range publishers {
		out = append(out, repo+" ("+who+")")
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// TestImageNamesAgree: `make images` builds graftimage's repository, and
// deploy/base, its components and the chart run it at the release the
// chart names (appVersion).
func TestImageNamesAgree(t *testing.T) {
	mk, err := os.ReadFile("deploy.mk")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^IMAGE\s*\?=\s*(\S+)$`).FindSubmatch(mk)
	if m == nil || string(m[1]) != graftimage.Repository {
		t.Errorf("deploy.mk's IMAGE is %q, want graftimage.Repository %s", m, graftimage.Repository)
	}
	want := graftimage.Repository + ":" + chartAppVersion(t)
	for _, dir := range []string{"base", "components/audit", "components/watchdog"} {
		data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		var got []string
		walkImages(doc, func(s string) { got = append(got, s) }, nil)
		if !slices.Equal(got, []string{want}) {
			t.Errorf("%s/kustomization.yaml runs %v, want %s (the chart's appVersion)", dir, got, want)
		}
	}
	values, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Image struct {
			Repository string `json:"repository"`
		} `json:"image"`
	}
	if err := yaml.Unmarshal(values, &v); err != nil || v.Image.Repository != graftimage.Repository {
		t.Errorf("the chart's image.repository is %q (%v), want %s", v.Image.Repository, err, graftimage.Repository)
	}
}
