package export

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// A template export cannot compile still gets what every render of it
// shares: rendered with every value a Pod may give its enum and bool
// parameters and the bounds of the others (as Facts renders it), a
// compared field with the same value in every render is compared with
// that value, a field no render sets must be absent, and the image
// follows the facts' rules (the image marker @@image@@, which the
// assembly fills per profile). Fields that differ between renders are not
// compared: Unchecked lists them, and the policy and `graft guarantee`
// say so.

// fallbackChecks are the checks of a template export refuses: one
// variant, and its runtime form.
func fallbackChecks(tmpl *templates.Template, facts TemplateFacts) ([]CheckVariant, RuntimeCheck, error) {
	base := map[string]string{}
	for _, p := range tmpl.Params {
		base[p.Name] = p.Default
	}
	type seen struct {
		kind    string
		fields  map[string][]any // field -> value in each render that has the container (nil: absent)
		volumes map[string][]any
	}
	byName := map[string]*seen{}
	var order []string
	keys := map[string][]string{}      // annotation key -> values
	labelKeys := map[string][]string{} // label key -> values
	renders := 0
	for _, over := range variants(tmpl, base) {
		frag, err := tmpl.Render(over)
		if err != nil {
			return nil, RuntimeCheck{}, fmt.Errorf("with %v: %w", over, err)
		}
		renders++
		vols := map[string]json.RawMessage{}
		for _, v := range frag.Volumes {
			vols[v.Name] = v.Raw
		}
		for _, l := range []struct {
			els  []templates.Element
			init bool
		}{{frag.InitContainers, true}, {frag.Containers, false}} {
			for _, el := range l.els {
				var c corev1.Container
				if err := json.Unmarshal(el.Raw, &c); err != nil {
					return nil, RuntimeCheck{}, fmt.Errorf("container %s: %w", el.Name, err)
				}
				defaultContainer(&c)
				kind := kindContainer
				if l.init {
					kind = kindInit
				}
				s := byName[el.Name]
				if s == nil {
					s = &seen{kind: kind, fields: map[string][]any{}, volumes: map[string][]any{}}
					byName[el.Name] = s
					order = append(order, el.Name)
				}
				if (s.kind == kindContainer) != (kind == kindContainer) {
					return nil, RuntimeCheck{}, fmt.Errorf("container %s is an init container for some values and a container for others", el.Name)
				}
				m, err := jsonOf(&c)
				if err != nil {
					return nil, RuntimeCheck{}, err
				}
				for _, f := range comparedFields {
					s.fields[f] = append(s.fields[f], m[f])
				}
				for _, vm := range c.VolumeMounts {
					raw, ok := vols[vm.Name]
					if !ok {
						continue
					}
					var v corev1.Volume
					if err := json.Unmarshal(raw, &v); err != nil {
						return nil, RuntimeCheck{}, fmt.Errorf("volume %s: %w", vm.Name, err)
					}
					defaultVolume(&v)
					vm, err := jsonOf(&v)
					if err != nil {
						return nil, RuntimeCheck{}, err
					}
					s.volumes[v.Name] = append(s.volumes[v.Name], vm)
				}
			}
		}
		for _, kv := range []struct {
			in  []templates.KV
			out map[string][]string
		}{{frag.Annotations, keys}, {frag.Labels, labelKeys}} {
			for _, a := range kv.in {
				if names.Reserved(a.Key) {
					kv.out[a.Key] = append(kv.out[a.Key], a.Value)
				}
			}
		}
	}
	e := &emitter{}
	cv := CheckVariant{}
	var rt RuntimeCheck
	for _, n := range order {
		s := byName[n]
		cc := CheckContainer{Name: n, Kind: s.kind, Size: -1}
		if s.kind == kindInit && slices.Equal(facts.Containers[n].Kinds, []string{kindNative}) {
			cc.Kind = kindNative
		}
		rc := RuntimeContainer{Name: n, Init: s.kind != kindContainer, When: "true", Image: true}
		expected := map[string]any{}
		for _, f := range comparedFields {
			if f == "image" {
				cc.Fields = append(cc.Fields, CheckField{Field: f, Expr: imageMarker})
				continue
			}
			vals := s.fields[f]
			if !allEqual(vals) {
				cc.Unchecked = append(cc.Unchecked, f)
				continue
			}
			expr, err := e.field(&holes{}, "c", f, vals[0])
			if err != nil {
				return nil, RuntimeCheck{}, err
			}
			cc.Fields = append(cc.Fields, CheckField{Field: f, Expr: expr})
			rc.Fields = append(rc.Fields, f)
			if vals[0] != nil {
				expected[f] = vals[0]
			}
		}
		lit, err := e.literal(&holes{}, expected, true)
		if err != nil {
			return nil, RuntimeCheck{}, err
		}
		rc.Expected = lit
		for _, vn := range slices.Sorted(maps.Keys(s.volumes)) {
			vals := s.volumes[vn]
			if !allEqual(vals) {
				cc.Unchecked = append(cc.Unchecked, "volume "+vn)
				continue
			}
			expr, err := e.eq(&holes{}, "v", vals[0], false)
			if err != nil {
				return nil, RuntimeCheck{}, err
			}
			cc.Volumes = append(cc.Volumes, CheckField{Field: vn, Expr: expr})
			rc.Volumes = append(rc.Volumes, RuntimeVolume{Name: vn, When: "true", Check: expr})
		}
		cv.Containers = append(cv.Containers, cc)
		rt.Containers = append(rt.Containers, rc)
	}
	for _, kv := range []struct {
		in  map[string][]string
		out *[]CheckKey
		rt  *[]RuntimeKey
	}{{keys, &cv.Annotations, &rt.Annotations}, {labelKeys, &cv.Labels, &rt.Labels}} {
		for _, k := range slices.Sorted(maps.Keys(kv.in)) {
			vals := kv.in[k]
			ck := CheckKey{Key: k}
			if len(vals) == renders && allEqual(anySlice(vals)) {
				ck.Expr = celString(vals[0])
			}
			*kv.out = append(*kv.out, ck)
			*kv.rt = append(*kv.rt, RuntimeKey{Key: k, When: "true", Value: ck.Expr})
		}
	}
	return []CheckVariant{cv}, rt, nil
}

// imageMarker stands for a refused template's image rule, which depends on
// the profile (its images, locks and allowedImages).
const imageMarker = "@@image@@"

func jsonOf(v any) (map[string]any, error) {
	var h holes
	out, err := h.decodeTyped(v)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

func allEqual(vals []any) bool {
	for _, v := range vals[1:] {
		if !reflect.DeepEqual(v, vals[0]) {
			return false
		}
	}
	return len(vals) > 0
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
