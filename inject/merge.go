package inject

// target names a list or map of the Pod that graft may add to.
type target uint8

const (
	tInits target = iota
	tContainers
	tVolumes
	tSecrets
	tEnv    // spec.containers[index].env
	tMounts // spec.containers[index].volumeMounts
	tAnnotations
	tLabels
)

// edit is the additions to one list or map. For lists, inserts hold
// positions in the desired list; for maps, keys to add or replace.
type edit struct {
	target   target
	index    int // container index for tEnv and tMounts
	state    presence
	length   int // current list length
	from, to int // span of scratch.inserts
}

type insert struct {
	pos     int
	ref     int
	replace bool // maps: the key exists with another value
}

// notice is a warning to return: an element graft would inject that the
// Pod already has under the same name and that graft did not inject.
type notice struct {
	kind string
	name string
}

// merge computes what pl adds to p, into s.edits and s.inserts. It never
// removes or replaces anything but graft's own status annotation, and
// matches by name (volume mounts also by path), so a second call after any
// other mutator adds only what is missing.
func merge(pl *plan, p *pod, s *scratch) {
	_, ours := p.annotation(annotationStatus)

	// Native sidecars, placed per template.
	missingInits := s.refsBuf[:0]
	for i := range pl.inits {
		el := &pl.inits[i]
		if p.hasInit(el.name) || p.hasContainer(el.name) {
			if !ours {
				s.notices = append(s.notices, notice{"container", el.name})
			}
			continue
		}
		missingInits = append(missingInits, i)
	}
	s.refsBuf = missingInits
	if len(missingInits) > 0 {
		e := s.beginEdit(tInits, 0, p.inits, len(p.initContainers))
		n := len(p.initContainers)
		b := n // first ordinary (non-sidecar) init container
		for i, c := range p.initContainers {
			if !c.sidecar {
				b = i
				break
			}
		}
		nFirst, nBefore := 0, 0
		for _, i := range missingInits {
			switch pl.inits[i].placement {
			case "first", "":
				nFirst++
			case "before-init":
				nBefore++
			}
		}
		first, before, last := 0, nFirst+b, nFirst+n+nBefore
		for _, i := range missingInits {
			el := &pl.inits[i]
			var pos int
			switch el.placement {
			case "first", "":
				pos, first = first, first+1
			case "before-init":
				pos, before = before, before+1
			default:
				pos, last = last, last+1
			}
			s.inserts = append(s.inserts, insert{pos: pos, ref: el.ref})
		}
		s.endEdit(e)
	}

	// Sidecars in spec.containers, appended.
	s.appendMissing(tContainers, 0, p.containersSeen, len(p.containers), pl.sidecars, func(name string) bool {
		if p.hasContainer(name) || p.hasInit(name) {
			if !ours {
				s.notices = append(s.notices, notice{"container", name})
			}
			return true
		}
		return false
	})
	s.appendMissing(tVolumes, 0, p.vols, len(p.volumes), pl.volumes, func(name string) bool {
		if contains(p.volumes, name) {
			if !ours {
				s.notices = append(s.notices, notice{"volume", name})
			}
			return true
		}
		return false
	})
	s.appendMissing(tSecrets, 0, p.secrets, len(p.pullSecrets), pl.secrets, func(name string) bool {
		return contains(p.pullSecrets, name)
	})

	// Every app container, including ones another mutator added since.
	for ci := range p.containers {
		c := &p.containers[ci]
		if pl.isOwn(c.name) {
			continue
		}
		env := p.envNames[c.envFrom:c.envTo]
		s.appendMissing(tEnv, ci, c.env, c.envCount, pl.appEnv, func(name string) bool {
			return contains(env, name)
		})
		mounts := p.mounts[c.mountsFrom:c.mountsTo]
		s.appendMissingMounts(ci, c, mounts, pl.appMount)
	}

	// Metadata: template annotations and labels only when absent; the
	// status annotation is graft's own and kept current.
	e := s.beginEdit(tAnnotations, 0, p.annotations, 0)
	for i := range pl.annotations {
		el := &pl.annotations[i]
		if _, ok := p.annotation(el.name); !ok {
			s.inserts = append(s.inserts, insert{ref: el.ref})
		}
	}
	if v, ok := p.annotation(annotationStatus); !ok {
		s.inserts = append(s.inserts, insert{ref: pl.status.ref})
	} else if !sameJSONString(v, pl.status.raw) {
		s.inserts = append(s.inserts, insert{ref: pl.status.ref, replace: true})
	}
	s.endEdit(e)
	e = s.beginEdit(tLabels, 0, p.labels, 0)
	for i := range pl.labels {
		el := &pl.labels[i]
		if _, ok := p.label(el.name); !ok {
			s.inserts = append(s.inserts, insert{ref: el.ref})
		}
	}
	s.endEdit(e)
}

func (s *scratch) beginEdit(t target, index int, state presence, length int) int {
	s.edits = append(s.edits, edit{target: t, index: index, state: state, length: length, from: len(s.inserts)})
	return len(s.edits) - 1
}

// endEdit closes edit i, dropping it if it holds no insert.
func (s *scratch) endEdit(i int) {
	s.edits[i].to = len(s.inserts)
	if s.edits[i].from == s.edits[i].to {
		s.edits = s.edits[:i]
	}
}

// appendMissing appends each element of want that has() says is missing.
func (s *scratch) appendMissing(t target, index int, state presence, length int, want []element, has func(string) bool) {
	e := s.beginEdit(t, index, state, length)
	pos := length
	if state != present {
		pos = 0
	}
	for i := range want {
		if has(want[i].name) {
			continue
		}
		s.inserts = append(s.inserts, insert{pos: pos, ref: want[i].ref})
		pos++
	}
	s.endEdit(e)
}

func (s *scratch) appendMissingMounts(ci int, c *container, have []mount, want []element) {
	e := s.beginEdit(tMounts, ci, c.volumeMounts, c.mountsCount)
	pos := c.mountsCount
	if c.volumeMounts != present {
		pos = 0
	}
	for i := range want {
		w := &want[i]
		found := false
		for _, m := range have {
			if m.name == w.name || m.path == w.mountPath {
				found = true
				break
			}
		}
		if found {
			continue
		}
		s.inserts = append(s.inserts, insert{pos: pos, ref: w.ref})
		pos++
	}
	s.endEdit(e)
}

func contains(list []string, name string) bool {
	for _, n := range list {
		if n == name {
			return true
		}
	}
	return false
}

// sameJSONString compares raw string content from the request with a
// quoted JSON string graft produced.
func sameJSONString(raw string, quoted []byte) bool {
	if len(quoted) >= 2 && raw == b2s(quoted[1:len(quoted)-1]) {
		return true
	}
	// Same value, other escaping: decode both (rare, allocates).
	a, err := unquoteRaw(raw, true)
	if err != nil {
		return false
	}
	b, err := unquoteRaw(b2s(quoted[1:len(quoted)-1]), true)
	return err == nil && a == b
}
