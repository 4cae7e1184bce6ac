package inject

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/graftdev/graft/internal/names"
)

// Pod-level resources (KEP-2837, on by default since 1.34). When a Pod
// sets spec.resources, the API server requires each pod-level request to
// be at least the aggregate of its containers' (regular, native sidecar
// and init containers alike), and caps the containers within the
// pod-level limits: a sidecar added to a Pod whose requests equal its
// containers' makes it invalid. So graft adds, to each resource the Pod
// sets at pod level, the requests of every container it injects in this
// call, and to each pod-level limit their limits (or, where a container
// sets no limit for it, its request, so that requests stay within
// limits). The figures include the LimitRange defaults graft gives its
// containers (limitrange.go), which is what the API server then sees. The
// sum only ever grows the aggregate by less than it adds, so the Pod
// stays valid whatever its own containers request.
//
// graft.dev/status records, per template, what graft added
// (podResources), so that a second call (reinvocation, or the repair of
// a sidecar another step removed) adds nothing again for a template it
// already accounted for, and an upgrade or `graft uninject` takes it
// back. A profile may refuse such Pods instead (podResources: deny).
//
// This path runs only for Pods that set spec.resources; it allocates.

// PodResourcesMode says how a profile answers a Pod that sets pod-level
// resources (spec.resources).
type PodResourcesMode string

const (
	// PodResourcesAdd adds the requests and limits of the containers
	// graft injects to the Pod's pod-level figures.
	PodResourcesAdd PodResourcesMode = "add"
	// PodResourcesDeny refuses such a Pod (reason pod-resources), naming
	// what its sidecars would need.
	PodResourcesDeny PodResourcesMode = "deny"
)

// PodResources is what graft.dev/status records graft added to a Pod's
// pod-level resources for one template: resource name to quantity.
type PodResources struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// podAdd is what this request adds to the pod-level figures for one
// template: one quantity per resource the Pod sets at pod level.
type podAdd struct {
	tmpl     int
	requests []namedQuantity
	limits   []namedQuantity
}

type namedQuantity struct {
	name string
	q    resource.Quantity
}

// parsePodResources reads spec.resources: its requests and limits, keys
// and values canonical (jsonscan.go).
func parsePodResources(sc *scanner, p *pod) error {
	if p.podRes = member(sc); p.podRes == isNull {
		return nil
	}
	var seen keySeen
	return eachKey(sc, func(k string) error {
		var err error
		switch k {
		case "requests":
			if err = seen.once(0, k); err == nil && member(sc) == present {
				p.podReq, err = parseStringMap(sc, p.podReq, true, &p.keysBuf)
			}
		case "limits":
			if err = seen.once(1, k); err == nil && member(sc) == present {
				p.podLim, err = parseStringMap(sc, p.podLim, true, &p.keysBuf)
			}
		default:
			err = sc.skip()
		}
		return err
	})
}

// setsPodResources reports whether the Pod sets any pod-level figure.
func (p *pod) setsPodResources() bool { return len(p.podReq) > 0 || len(p.podLim) > 0 }

// podResourceAdds computes, per template of pl that this request adds
// containers of and that the record has not accounted for, what to add
// to the Pod's pod-level figures (s.podAdds).
func (s *scratch) podResourceAdds(pl *plan, p *pod) {
	s.podAdds = s.podAdds[:0]
	if !p.setsPodResources() {
		return
	}
	var defaults *limitDefaults
	if v, ok := p.annotation(names.LimitRangerAnnotation); ok {
		d := readLimitDefaults(p, v)
		defaults = &d
	}
	for ti := range pl.tmpls {
		if s.skipped[ti] || s.cur.podResources(pl.tmpls[ti].name) != "" {
			continue
		}
		add := podAdd{tmpl: ti}
		for _, l := range [...][]element{pl.inits, pl.sidecars} {
			for i := range l {
				el := &l[i]
				if el.tmpl != ti || !s.added[el.ref] {
					continue
				}
				raw := el.raw
				if defaults != nil {
					raw, _ = defaults.apply(raw)
				}
				req, lim := containerResources(raw)
				for _, kv := range p.podReq {
					addQuantity(&add.requests, kv.key, req[kv.key])
				}
				for _, kv := range p.podLim {
					q, ok := lim[kv.key]
					if !ok {
						q = req[kv.key]
					}
					addQuantity(&add.limits, kv.key, q)
				}
			}
		}
		if len(add.requests) > 0 || len(add.limits) > 0 {
			s.podAdds = append(s.podAdds, add)
		}
	}
}

// containerResources reads a rendered container's requests and limits;
// a quantity that does not parse counts for nothing (Render validated
// them). Quantities are decoded as strings first: a LimitRange default
// copied from the Pod may be spelled with JSON escapes, which
// resource.Quantity's own decoder does not read.
func containerResources(raw []byte) (req, lim map[string]resource.Quantity) {
	var c struct {
		Resources struct {
			Requests map[string]json.RawMessage `json:"requests"`
			Limits   map[string]json.RawMessage `json:"limits"`
		} `json:"resources"`
	}
	_ = json.Unmarshal(raw, &c)
	return quantities(c.Resources.Requests), quantities(c.Resources.Limits)
}

// quantities parses each value of m, a JSON string or number.
func quantities(m map[string]json.RawMessage) map[string]resource.Quantity {
	out := make(map[string]resource.Quantity, len(m))
	for name, v := range m {
		var text string
		if json.Unmarshal(v, &text) != nil {
			text = string(v) // a number
		}
		if q, err := resource.ParseQuantity(text); err == nil {
			out[name] = q
		}
	}
	return out
}

// addQuantity adds q, if not zero, to the entry of name in list.
func addQuantity(list *[]namedQuantity, name string, q resource.Quantity) {
	if q.IsZero() {
		return
	}
	for i := range *list {
		if (*list)[i].name == name {
			(*list)[i].q.Add(q)
			return
		}
	}
	*list = append(*list, namedQuantity{name: name, q: q.DeepCopy()})
}

// podResourcesRecord is the recorded podResources of template ti, as
// JSON (a new one from s.podAdds, else "").
func (s *scratch) podResourcesRecord(ti int) string {
	for i := range s.podAdds {
		a := &s.podAdds[i]
		if a.tmpl != ti {
			continue
		}
		pr := PodResources{Requests: quantityMap(a.requests), Limits: quantityMap(a.limits)}
		b, _ := json.Marshal(pr) // maps of strings always marshal, sorted
		return string(b)
	}
	return ""
}

func quantityMap(l []namedQuantity) map[string]string {
	if len(l) == 0 {
		return nil
	}
	m := make(map[string]string, len(l))
	for _, nq := range l {
		m[nq.name] = nq.q.String()
	}
	return m
}

// appendPodResourceOps appends to patch (a JSON array) the ops that add
// s.podAdds to the Pod's pod-level figures, each a replace of one
// quantity; the Pod's other quantities keep their spelling. It returns
// how many ops it added.
func appendPodResourceOps(patch []byte, p *pod, s *scratch) ([]byte, int) {
	if len(s.podAdds) == 0 {
		return patch, 0
	}
	n := 0
	patch = patch[:len(patch)-1] // the closing bracket
	for _, side := range [...]struct {
		key string
		pod []kv
	}{{"requests", p.podReq}, {"limits", p.podLim}} {
		for _, kv := range side.pod {
			var sum resource.Quantity
			found := false
			for i := range s.podAdds {
				l := s.podAdds[i].requests
				if side.key == "limits" {
					l = s.podAdds[i].limits
				}
				for _, nq := range l {
					if nq.name == kv.key {
						sum.Add(nq.q)
						found = true
					}
				}
			}
			if !found {
				continue
			}
			total, err := parseRawQuantity(kv.value)
			if err != nil {
				continue // not a quantity: the API server refuses the Pod anyway
			}
			total.Add(sum)
			if len(patch) > 1 {
				patch = append(patch, ',')
			}
			patch = append(patch, `{"op":"replace","path":"/spec/resources/`...)
			patch = append(patch, side.key...)
			patch = append(patch, '/')
			patch = append(patch, pointerEscape(kv.key)...) // canonical: escaped already
			patch = append(patch, `","value":`...)
			patch = strconv.AppendQuote(patch, total.String())
			patch = append(patch, '}')
			n++
		}
	}
	return append(patch, ']'), n
}

// parseRawQuantity parses a quantity as the scanner read it: raw JSON
// string content, or a number's text.
func parseRawQuantity(raw string) (resource.Quantity, error) {
	v, err := unquoteRaw(raw, strings.Contains(raw, `\`))
	if err != nil {
		return resource.Quantity{}, err
	}
	return resource.ParseQuantity(v)
}

// pointerEscape escapes a map key as a JSON Pointer token (RFC 6901).
func pointerEscape(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// podResourcesDenial is the message refusing a Pod that sets pod-level
// resources under podResources: deny.
func (s *scratch) podResourcesDenial(pl *plan, profile string) string {
	var parts []string
	for i := range s.podAdds {
		a := &s.podAdds[i]
		var req []string
		for _, nq := range a.requests {
			req = append(req, nq.name+" "+nq.q.String())
		}
		slices.Sort(req)
		parts = append(parts, fmt.Sprintf("template %s's containers request %s", pl.tmpls[a.tmpl].name, strings.Join(req, ", ")))
	}
	return fmt.Sprintf("graft refuses this Pod: it sets pod-level resources (spec.resources), and profile %q sets podResources: deny "+
		"rather than add its sidecars' figures to them (%s)", profile, strings.Join(parts, "; "))
}

// subtractPodResources takes what t records graft added off the Pod's
// pod-level figures in doc (an upgrade, graft uninject); a figure never
// goes below zero.
func subtractPodResources(doc map[string]any, t *TemplateStatus) {
	if t.PodResources == nil {
		return
	}
	res, _ := doc["spec"].(map[string]any)["resources"].(map[string]any)
	for _, side := range [...]struct {
		key string
		add map[string]string
	}{{"requests", t.PodResources.Requests}, {"limits", t.PodResources.Limits}} {
		m, _ := res[side.key].(map[string]any)
		for name, v := range side.add {
			cur, ok := m[name].(string)
			if !ok {
				continue
			}
			total, err1 := resource.ParseQuantity(cur)
			added, err2 := resource.ParseQuantity(v)
			if err1 != nil || err2 != nil {
				continue
			}
			total.Sub(added)
			if total.Sign() < 0 {
				total = resource.Quantity{}
			}
			m[name] = total.String()
		}
	}
}

// appendPodResources appends entry o's podResources, escaped (see
// recordwrite.go): what the record holds, else what this request adds.
func (s *scratch) appendPodResources(dst []byte, r *record, o outEntry) []byte {
	raw := ""
	if o.rec >= 0 {
		raw = r.entries[o.rec].podRes
	}
	if raw == "" && o.ti >= 0 && len(s.podAdds) > 0 {
		raw = s.podResourcesRecord(o.ti)
	}
	if raw == "" {
		return dst
	}
	dst = append(dst, `,\"podResources\":`...)
	return appendEscaped(dst, raw)
}
