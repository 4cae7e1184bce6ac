package inject

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// LimitRanger's re-run (see rerun.go) sets on every container and init
// container each default request and limit of the namespace's LimitRanges
// that it lacks, and records what it set in the annotation
// kubernetes.io/limit-ranger:
//
//	LimitRanger plugin set: cpu, memory request for container app; ephemeral-storage limit for init container setup
//
// graft cannot read the LimitRange, so it learns the defaults from the
// first run's record: which resources were defaulted, requests and limits
// apart, and their values from the containers the record names. It then
// gives its own containers what the re-run would. The built-in templates
// set cpu and memory requests and limits, so this matters for LimitRanges
// that default other resources (ephemeral-storage). What the record cannot
// show is left to the re-run, which then calls graft again: a default for
// a resource every container already set, and all but the last LimitRange
// of a namespace that has several (each run overwrites the annotation).
//
// The Pod then differs from the one a second call would give in one
// respect only: the re-run, setting nothing, leaves the annotation with the
// first run's record rather than rewriting it to name graft's containers.
// graft never writes that annotation itself.
//
// This path is rare (Pods carrying the annotation in namespaces graft
// injects) and allocates freely.

const limitRangerPrefix = "LimitRanger plugin set: "

// injectsContainers reports whether this request adds one of graft's
// containers or init containers.
func (s *scratch) injectsContainers() bool {
	for i := range s.edits {
		if t := s.edits[i].target; t == tInits || t == tContainers {
			return true
		}
	}
	return false
}

// limitRangeDefaults returns, per element ref, the JSON of each of pl's
// containers that the LimitRange defaults in annotation (raw JSON string
// content) would change, with those defaults added; nil when none would.
func limitRangeDefaults(pl *plan, p *pod, annotation string, s *scratch) [][]byte {
	d := readLimitDefaults(p, annotation)
	if len(d.requests) == 0 && len(d.limits) == 0 {
		return nil
	}
	var out [][]byte
	for _, l := range [][]element{pl.sidecars, pl.inits} {
		for i := range l {
			el := &l[i]
			raw, changed := d.apply(s.appendElement(nil, el))
			if !changed {
				continue
			}
			if out == nil {
				out = make([][]byte, len(pl.byRef))
			}
			out[el.ref] = raw
		}
	}
	return out
}

// limitDefaults are the defaults a LimitRange applies, resource name to
// quantity (raw JSON), as far as the annotation shows them.
type limitDefaults struct {
	requests, limits map[string]json.RawMessage
}

// resourcesOf is what limitRangeDefaults reads of a container.
type resourcesOf struct {
	Name      string `json:"name"`
	Resources struct {
		Requests map[string]json.RawMessage `json:"requests"`
		Limits   map[string]json.RawMessage `json:"limits"`
	} `json:"resources"`
}

// readLimitDefaults parses the annotation and reads each default's value
// from a container it names. Anything it cannot read is left out.
func readLimitDefaults(p *pod, annotation string) limitDefaults {
	d := limitDefaults{requests: map[string]json.RawMessage{}, limits: map[string]json.RawMessage{}}
	val, err := unquoteRaw(annotation, strings.Contains(annotation, `\`))
	if err != nil {
		return d
	}
	record, ok := strings.CutPrefix(val, limitRangerPrefix)
	if !ok {
		return d
	}
	var spec struct {
		Containers     []resourcesOf `json:"containers"`
		InitContainers []resourcesOf `json:"initContainers"`
	}
	if json.Unmarshal([]byte(p.spec), &spec) != nil {
		return d
	}
	for _, entry := range strings.Split(record, "; ") {
		names, kind, isLimit, ok := cutLimitEntry(entry)
		if !ok {
			continue
		}
		into := d.requests
		if isLimit {
			into = d.limits
		}
		list, name := spec.Containers, ""
		if n, ok := strings.CutPrefix(kind, "init container "); ok {
			list, name = spec.InitContainers, n
		} else if n, ok := strings.CutPrefix(kind, "container "); ok {
			name = n
		} else {
			continue
		}
		for _, c := range list {
			if c.Name != name {
				continue
			}
			have := c.Resources.Requests
			if isLimit {
				have = c.Resources.Limits
			}
			for _, r := range strings.Split(names, ", ") {
				if v, ok := have[r]; ok && into[r] == nil {
					into[r] = v
				}
			}
			break
		}
	}
	return d
}

// cutLimitEntry splits "cpu, memory request for container app" into the
// resource names and the container ("container app"), and says whether
// the entry is about limits rather than requests.
func cutLimitEntry(entry string) (names, container string, isLimit, ok bool) {
	if names, container, ok = strings.Cut(entry, " request for "); ok {
		return names, container, false, true
	}
	if names, container, ok = strings.Cut(entry, " limit for "); ok {
		return names, container, true, true
	}
	return "", "", false, false
}

// apply adds to a container's JSON the defaults LimitRanger would set on
// it, and reports whether it added any. The API server first defaults each
// request a container lacks to its limit (SetDefaults_Pod in
// k8s.io/kubernetes pkg/apis/core/v1/defaults.go), so LimitRanger sets a
// request only where the container has neither; and since a LimitRange
// with a default limit always has a default request (SetDefaults_LimitRangeItem),
// a limit is added alone only when the request is there or known too:
// otherwise the API server would copy the added limit into the request,
// which LimitRanger would not have done.
func (d limitDefaults) apply(raw []byte) ([]byte, bool) {
	var c map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep every number's spelling
	if dec.Decode(&c) != nil {
		return raw, false
	}
	res, _ := c["resources"].(map[string]any)
	if res == nil {
		res = map[string]any{}
	}
	req, _ := res["requests"].(map[string]any)
	lim, _ := res["limits"].(map[string]any)
	if req == nil {
		req = map[string]any{}
	}
	if lim == nil {
		lim = map[string]any{}
	}
	changed := false
	for _, r := range d.resources() {
		_, hasReq := req[r]
		_, hasLim := lim[r]
		defReq, knowReq := d.requests[r]
		defLim, knowLim := d.limits[r]
		needReq := !hasReq && !hasLim
		needLim := knowLim && !hasLim
		if needLim && needReq && !knowReq {
			continue
		}
		if needLim {
			lim[r] = defLim
			changed = true
		}
		if needReq && knowReq {
			req[r] = defReq
			changed = true
		}
	}
	if !changed {
		return raw, false
	}
	if len(req) > 0 {
		res["requests"] = req
	}
	if len(lim) > 0 {
		res["limits"] = lim
	}
	c["resources"] = res
	out, err := json.Marshal(c) // maps marshal with sorted keys, like the templates
	if err != nil {
		return raw, false
	}
	return out, true
}

// resources lists every resource with a default, sorted for determinism.
func (d limitDefaults) resources() []string {
	var out []string
	for r := range d.requests {
		out = append(out, r)
	}
	for r := range d.limits {
		if _, dup := d.requests[r]; !dup {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}
