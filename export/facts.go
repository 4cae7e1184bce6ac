package export

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/graftdev/graft/templates"
)

// The guarantee policy verifies the sidecars themselves, so it must know
// every container a template can add: its name, whether it is a native
// sidecar, a plain init container or a container, and the image it runs.
// Those come from rendering the template as graft does, with every value
// a Pod's annotations can give the parameters that steer it (enum and
// bool values, the bounds of numbers and lists), then with other values
// of its text parameters, to see whether an image follows one. What a
// profile accepts follows from these facts and the profile's values,
// locks and allowed images (see sidecars), by rules simple enough for the
// Helm chart to apply to the same facts.

// Kinds of container a template adds.
const (
	kindNative    = "native"    // an init container with restartPolicy: Always
	kindInit      = "init"      // an init container that runs to completion
	kindContainer = "container" // an entry of spec.containers
)

// TemplateFacts are what one template can add to a Pod.
type TemplateFacts struct {
	// Containers it can add, by name.
	Containers map[string]*ContainerFacts `json:"containers"`
	// ImageDefaults are the defaults of the parameters that are images
	// (ContainerFacts.ImageParams).
	ImageDefaults map[string]string `json:"imageDefaults,omitempty"`
}

// ContainerFacts say how a template adds one container.
type ContainerFacts struct {
	// Kinds it is added as: native, init or container.
	Kinds []string `json:"kinds"`
	// Images it runs whatever the parameters.
	Images []string `json:"images,omitempty"`
	// ImageParams are parameters whose value is its image.
	ImageParams []string `json:"imageParams,omitempty"`
	// ImageFollows: its image follows a parameter's value in another way
	// (any image graft may inject is accepted, within allowedImages).
	ImageFollows bool `json:"imageFollows,omitempty"`
}

// maxFactVariants bounds the renders of one template; past it, each steering
// parameter is varied alone.
const maxFactVariants = 512

// Facts renders tmpl and returns what it can add to a Pod.
func Facts(tmpl *templates.Template) (TemplateFacts, error) {
	base := map[string]string{}
	for _, prm := range tmpl.Params {
		base[prm.Name] = prm.Default
	}
	out := TemplateFacts{Containers: map[string]*ContainerFacts{}}
	vs := variants(tmpl, base)
	rendered := make([]map[string]string, len(vs)) // per variant: container name -> image
	for i, over := range vs {
		images, err := containers(tmpl, over, &out)
		if err != nil {
			return TemplateFacts{}, err
		}
		rendered[i] = images
	}
	// Each text parameter is probed in every variant, not only at the
	// defaults: a container that only some values of the steering
	// parameters add (mesh-proxy's proxy-init, with trafficRedirect:
	// init-container) shows what its image follows only where it is
	// rendered.
	for i, over := range vs {
		for j := range tmpl.Params {
			prm := &tmpl.Params[j]
			if prm.Type != templates.TypeString && prm.Type != templates.TypeList {
				continue
			}
			if err := probe(tmpl, prm, over, rendered[i], &out); err != nil {
				return TemplateFacts{}, fmt.Errorf("template %s: %w", tmpl.Name, err)
			}
		}
	}
	// Images equal to an image parameter's default are that parameter's:
	// each profile gives its own value.
	for _, images := range rendered {
		for name, image := range images {
			cf := out.Containers[name]
			if !slices.ContainsFunc(cf.ImageParams, func(p string) bool { return defaultOf(tmpl, p) == image }) {
				cf.Images = appendNew(cf.Images, image)
			}
		}
	}
	for _, cf := range out.Containers {
		for _, p := range cf.ImageParams {
			if out.ImageDefaults == nil {
				out.ImageDefaults = map[string]string{}
			}
			out.ImageDefaults[p] = defaultOf(tmpl, p)
		}
		slices.Sort(cf.Kinds)
		slices.Sort(cf.Images)
		slices.Sort(cf.ImageParams)
	}
	return out, nil
}

func defaultOf(tmpl *templates.Template, param string) string {
	p, _ := tmpl.Param(param)
	return p.Default
}

// containers renders tmpl with over, adds the kinds of its containers to
// out, and returns their images by name.
func containers(tmpl *templates.Template, over map[string]string, out *TemplateFacts) (map[string]string, error) {
	frag, err := tmpl.Render(over)
	if err != nil {
		return nil, fmt.Errorf("template %s with %v: %w", tmpl.Name, over, err)
	}
	images := map[string]string{}
	for _, l := range []struct {
		els    []templates.Element
		inInit bool
	}{{frag.InitContainers, true}, {frag.Containers, false}} {
		for _, el := range l.els {
			kind, image, err := containerKind(el.Raw, l.inInit)
			if err != nil {
				return nil, fmt.Errorf("template %s: container %s: %w", tmpl.Name, el.Name, err)
			}
			cf := out.Containers[el.Name]
			if cf == nil {
				cf = &ContainerFacts{}
				out.Containers[el.Name] = cf
			}
			cf.Kinds = appendNew(cf.Kinds, kind)
			images[el.Name] = image
		}
	}
	return images, nil
}

// probe renders tmpl with base but two other values of prm (if a few
// candidates pass its rules; none: it cannot vary, nothing to follow);
// baseImages are base's containers' images. A container name neither the
// variants nor the other probe gave follows the value, which the policy
// cannot know. One both probes give but the variants did not is present
// for some values, and is added. An image that changes with the value
// follows it.
func probe(tmpl *templates.Template, prm *templates.Param, base, baseImages map[string]string, out *TemplateFacts) error {
	type probed struct {
		value  string
		images map[string]string
	}
	var got []probed
	for _, v := range probeValues(prm, base[prm.Name], 2) {
		images, err := containers(tmpl, with(base, prm.Name, v), &TemplateFacts{Containers: map[string]*ContainerFacts{}})
		if err != nil {
			continue // a value the template refuses gives no Pod
		}
		got = append(got, probed{v, images})
	}
	for k, pr := range got {
		for _, name := range slices.Sorted(maps.Keys(pr.images)) {
			if _, ok := out.Containers[name]; ok {
				continue
			}
			if _, both := got[len(got)-1-k].images[name]; len(got) < 2 || !both {
				return fmt.Errorf("the name of container %s follows parameter %s, which a Pod may set: "+
					"the guarantee policy cannot check such a container", name, prm.Name)
			}
			if _, err := containers(tmpl, with(base, prm.Name, pr.value), out); err != nil {
				return err
			}
		}
	}
	for _, pr := range got {
		for name, image := range pr.images {
			before, had := baseImages[name]
			cf := out.Containers[name]
			switch {
			case had && image == before:
			case image == pr.value && (!had || before == base[prm.Name]):
				cf.ImageParams = appendNew(cf.ImageParams, prm.Name)
			default:
				cf.ImageFollows = true
			}
		}
	}
	return nil
}

// containerKind reads a rendered container's kind and image.
func containerKind(raw []byte, inInit bool) (kind, image string, err error) {
	var c struct {
		Image         string `json:"image"`
		RestartPolicy string `json:"restartPolicy"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", "", err
	}
	switch {
	case !inInit:
		kind = kindContainer
	case c.RestartPolicy == "Always":
		kind = kindNative
	default:
		kind = kindInit
	}
	return kind, c.Image, nil
}

// variants are the parameter values to render tmpl with: base, every
// combination of the enum and bool parameters (each alone past
// maxFactVariants), then each number and list at its bounds.
func variants(tmpl *templates.Template, base map[string]string) []map[string]string {
	out := []map[string]string{base}
	type axis struct {
		name   string
		values []string
	}
	var steer []axis
	combos := 1
	for i := range tmpl.Params {
		prm := &tmpl.Params[i]
		switch prm.Type {
		case templates.TypeEnum:
			steer = append(steer, axis{prm.Name, prm.Values})
			combos *= len(prm.Values)
		case templates.TypeBool:
			steer = append(steer, axis{prm.Name, []string{"false", "true"}})
			combos *= 2
		case templates.TypeInt, templates.TypeQuantity, templates.TypeDuration, templates.TypeList:
			for _, b := range []string{prm.Min, prm.Max} {
				if b == "" {
					continue
				}
				if prm.Type == templates.TypeList {
					b = repeatItems(base[prm.Name], b)
				}
				if _, err := prm.Parse(b); err == nil && b != base[prm.Name] {
					out = append(out, with(base, prm.Name, b))
				}
			}
		}
	}
	if combos > maxFactVariants {
		for _, a := range steer {
			for _, v := range a.values {
				out = append(out, with(base, a.name, v))
			}
		}
		return out
	}
	combo := []map[string]string{base}
	for _, a := range steer {
		var next []map[string]string
		for _, c := range combo {
			for _, v := range a.values {
				next = append(next, with(c, a.name, v))
			}
		}
		combo = next
	}
	return append(out, combo...)
}

// repeatItems is a list of n items (n written as a bound) made by
// repeating the items of list; an empty list stays empty, the only list
// known valid.
func repeatItems(list, bound string) string {
	var n int
	if _, err := fmt.Sscan(bound, &n); err != nil || n < 0 || list == "" {
		return list
	}
	items := strings.Split(list, ",")
	out := make([]string, n)
	for i := range out {
		out[i] = strings.TrimSpace(items[i%len(items)])
	}
	return strings.Join(out, ",")
}

// probeValues are up to n other values than v that p accepts, from a few
// candidates.
func probeValues(p *templates.Param, v string, n int) []string {
	cands := []string{v + "0", v + "x", "x" + v, v + "-x", v + ".x", "x", "0", "example.invalid/probe:1"}
	if p.Type == templates.TypeList {
		cands = nil
		for _, item := range []string{"x", "0", "probe.example.invalid", "/probe", "80"} {
			if v == "" {
				cands = append(cands, item)
			} else {
				cands = append(cands, v+","+item)
			}
		}
	}
	var out []string
	for _, c := range cands {
		if c == v || slices.Contains(out, c) {
			continue
		}
		if _, err := p.Parse(c); err == nil {
			out = append(out, c)
			if len(out) == n {
				break
			}
		}
	}
	return out
}

func with(m map[string]string, k, v string) map[string]string {
	out := maps.Clone(m)
	out[k] = v
	return out
}

func appendNew(l []string, v string) []string {
	if slices.Contains(l, v) {
		return l
	}
	return append(l, v)
}

// union is a, then the elements of b that a lacks, in order.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, v := range b {
		out = appendNew(out, v)
	}
	return out
}
