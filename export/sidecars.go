package export

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/imageref"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// Sidecar is what a profile may inject under one container name, by its
// template's facts: the kinds and images a Pod's container of that name
// must have to be the profile's. graft export's policies check the
// containers a record claims against these (intactCondition, forged);
// graft's shipped guarantee compares the containers' content
// (internal/registration).
type Sidecar struct {
	// Template is the template that adds it.
	Template string
	// Kinds it may be added as: native, init or container.
	Kinds []string
	// Images it may run: exact images, and prefixes ending in "*" ("*":
	// any image).
	Images []string
}

// ProfileSidecars returns the containers profile of cfg may inject with
// the templates of set.
func ProfileSidecars(cfg inject.Config, set *templates.Set, profile string) (map[string]Sidecar, error) {
	cfg, err := cfg.Defaulted()
	if err != nil {
		return nil, err
	}
	p, ok := cfg.Profiles[profile]
	if !ok {
		return nil, fmt.Errorf("%w %q", inject.ErrUnknownProfile, profile)
	}
	out := map[string]Sidecar{}
	for _, tn := range union(p.Templates, p.AllowedTemplates) {
		tmpl, ok := set.Get(tn)
		if !ok {
			return nil, fmt.Errorf("profile %s: no template %s", profile, tn)
		}
		tf, err := Facts(tmpl)
		if err != nil {
			return nil, err
		}
		if err := addSidecars(out, &p, tmpl, tf); err != nil {
			return nil, fmt.Errorf("profile %s: %w", profile, err)
		}
	}
	return out, nil
}

// addSidecars adds what template tmpl (its facts tf) may add to Pods of
// profile p: its containers, each running the template's own images, the
// profile's value of an image parameter, and, where a Pod's annotation
// may set that parameter, any image the profile allows.
func addSidecars(out map[string]Sidecar, p *inject.Profile, tmpl *templates.Template, tf TemplateFacts) error {
	for _, name := range slices.Sorted(maps.Keys(tf.Containers)) {
		cf := tf.Containers[name]
		s, ok := out[name]
		if !ok {
			s = Sidecar{Template: tmpl.Name}
		}
		if s.Template != tmpl.Name {
			return fmt.Errorf("container %s is injected by templates %s and %s", name, s.Template, tmpl.Name)
		}
		s.Kinds = union(s.Kinds, cf.Kinds)
		s.Images = union(s.Images, ProfileImages(p, tmpl.Name, cf, tf.ImageDefaults))
		slices.Sort(s.Kinds)
		slices.Sort(s.Images)
		out[name] = s
	}
	return nil
}

// ProfileImages are the images profile p may run in the container of
// template tmpl with facts cf: the template's own, the profile's value
// (else the default) of an image parameter, and where a Pod's annotation
// may set that parameter or the image follows one, prefixes ending in
// "*": the profile's allowedImages, else "*" (any image).
func ProfileImages(p *inject.Profile, tmpl string, cf *ContainerFacts, defaults map[string]string) []string {
	chosen := []string{"*"}
	if allowed := p.AllowedImages; len(allowed) > 0 {
		chosen = nil
		for _, a := range allowed {
			// Each entry up to a boundary (imageref.Expand, the
			// engine's rule).
			exact, prefixes := imageref.Expand(a)
			if exact != "" {
				chosen = append(chosen, exact)
			}
			for _, pre := range prefixes {
				chosen = append(chosen, pre+"*")
			}
		}
	}
	images := slices.Clone(cf.Images)
	for _, param := range cf.ImageParams {
		v, ok := p.Params[tmpl][param]
		if !ok {
			v = defaults[param]
		}
		images = appendNew(images, v)
		if !p.Locks(tmpl, param) {
			images = union(images, chosen)
		}
	}
	if cf.ImageFollows {
		images = union(images, chosen)
	}
	slices.Sort(images)
	return images
}

// SidecarExpr is a CEL expression that holds when the Pod container bound
// to c, found among the init containers (init) or not, is one of sidecars
// by its kind and image: an exact entry, or a prefix entry and an image
// reference, as the engine requires (imageref).
func SidecarExpr(sidecars map[string]Sidecar, init bool) (string, error) {
	var exact, prefixes []string
	for _, n := range slices.Sorted(maps.Keys(sidecars)) {
		s := sidecars[n]
		for _, k := range s.Kinds {
			for _, img := range s.Images {
				if pre, ok := strings.CutSuffix(img, "*"); ok {
					prefixes = append(prefixes, n+"|"+k+"|"+pre)
				} else {
					exact = append(exact, n+"|"+k+"|"+img)
				}
			}
		}
	}
	kind := `"` + kindContainer + `"`
	if init {
		kind = `(c.?restartPolicy.orValue("") == "Always" ? "native" : "init")`
	}
	k := `c.name + "|" + ` + kind + ` + "|" + c.?image.orValue("")`
	ex, err := jsonList(exact)
	if err != nil {
		return "", err
	}
	pre, err := jsonList(prefixes)
	if err != nil {
		return "", err
	}
	img := `c.?image.orValue("")`
	return "((" + k + ") in " + ex + " ||\n  " + pre + ".exists(x, (" + k + ").startsWith(x)) && " + imageref.CELValid(img) + ")", nil
}

// jsonList writes l as JSON, which for a list of strings is also a CEL
// literal.
func jsonList(l []string) (string, error) {
	if l == nil {
		l = []string{}
	}
	b, err := json.Marshal(l)
	return string(b), err
}

// SidecarNames is the CEL list of sidecars' names.
func SidecarNames(sidecars map[string]Sidecar) string {
	names := slices.Sorted(maps.Keys(sidecars))
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// OtherOSExpr is CEL that holds for a Pod that cannot run on Linux nodes,
// the Pods graft skips with reason os (inject/os.go): by spec.os.name, a
// kubernetes.io/os node selector, or a required node affinity every term
// of which leaves Linux out.
const OtherOSExpr = `object.spec.?os.name.orValue("linux") != "linux" ||` + "\n" +
	`object.spec.?nodeSelector[?"` + names.OSLabel + `"].orValue("linux") != "linux" ||` + "\n" +
	`[object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([])].all(terms,` + "\n" +
	`  size(terms) > 0 && terms.all(t, t.?matchExpressions.orValue([]).exists(e, e.key == "` + names.OSLabel + `" &&` + "\n" +
	`    (e.operator == "In" && !("linux" in e.?values.orValue([])) || e.operator == "NotIn" && "linux" in e.?values.orValue([]) ||` + "\n" +
	`     e.operator == "DoesNotExist"))))`
