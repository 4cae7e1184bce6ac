package inject

import (
	"errors"
	"slices"
	"strings"

	"github.com/graftdev/graft/internal/names"
)

// presence says whether a map or list member exists, is null, or holds a value.
type presence uint8

const (
	absent presence = iota
	isNull
	present
)

// pod is what the engine reads of a Pod: names and the shape of the lists
// and maps graft may touch. Strings alias the request body (raw JSON string
// content). The slices are reused across requests (see scratch).
type pod struct {
	spec               string // the spec object's span
	metaRead           bool   // parsePodMetaAt succeeded
	name, generateName string
	hostNetwork        bool
	// automountOff: spec.automountServiceAccountToken is false.
	automountOff bool
	// os is what the spec says of the operating system (os.go).
	os podOS

	annotations, labels presence
	annotationKeys      []kv // every annotation: graft's own are looked up here
	labelKeys           []kv

	containers     []container
	containersSeen presence
	initContainers []initContainer
	inits          presence
	volumes        []string
	// volumeRaw is each volume's JSON, by the index of volumes.
	volumeRaw   []string
	vols        presence
	pullSecrets []string
	secrets     presence

	// envNames, envRaw and mounts back the per-container env (names, and
	// each variable's JSON) and volumeMounts lists.
	envNames []string
	envRaw   []string
	mounts   []mount
	// ports back every container's and init container's ports; uid is
	// the Pod securityContext's runAsUser (collide.go).
	ports []port
	uid   uid
	// podRes is spec.resources, and podReq and podLim its requests and
	// limits (podresources.go).
	podRes         presence
	podReq, podLim []kv
	// keysBuf is working memory for the duplicate key check of maps.
	keysBuf []string
}

type kv struct{ key, value string }

type container struct {
	name string
	// raw is the container's JSON (own.go compares it with graft's).
	raw                   string
	env, volumeMounts     presence
	envFrom, envTo        int // span of pod.envNames
	mountsFrom, mountsTo  int // span of pod.mounts
	envCount, mountsCount int
	// uid is securityContext.runAsUser.
	uid uid
}

type initContainer struct {
	name string
	// raw is the container's JSON (own.go compares it with graft's).
	raw     string
	sidecar bool // restartPolicy: Always
	// restart says whether restartPolicy is set (to any value).
	restart presence
	// tokenPath says the container mounts a volume, tokenVolume, at the
	// ServiceAccount token path: the only mount of init containers graft
	// reads (see tokenVolume).
	tokenPath   bool
	tokenVolume string
	// uid is securityContext.runAsUser.
	uid uid
}

type mount struct{ name, path string }

func (p *pod) reset() {
	*p = pod{
		annotationKeys: p.annotationKeys[:0],
		labelKeys:      p.labelKeys[:0],
		containers:     p.containers[:0],
		initContainers: p.initContainers[:0],
		volumes:        p.volumes[:0],
		volumeRaw:      p.volumeRaw[:0],
		pullSecrets:    p.pullSecrets[:0],
		envNames:       p.envNames[:0],
		envRaw:         p.envRaw[:0],
		mounts:         p.mounts[:0],
		ports:          p.ports[:0],
		podReq:         p.podReq[:0],
		podLim:         p.podLim[:0],
		keysBuf:        p.keysBuf[:0],
	}
	p.os.reset()
}

func (p *pod) annotation(key string) (string, bool) { return lookup(p.annotationKeys, key) }
func (p *pod) label(key string) (string, bool)      { return lookup(p.labelKeys, key) }

func lookup(kvs []kv, key string) (string, bool) {
	for _, e := range kvs {
		if e.key == key {
			return e.value, true
		}
	}
	return "", false
}

// displayName is the name for logs: name, or generateName for Pods named
// by the API server.
func (p *pod) displayName() string {
	if p.name != "" {
		return p.name
	}
	return p.generateName
}

// hasGraftAnnotations reports whether the Pod chooses templates or sets
// parameters.
func (p *pod) hasGraftAnnotations() bool {
	for _, a := range p.annotationKeys {
		if strings.HasPrefix(a.key, names.Prefix) && a.key != names.Status {
			return true
		}
	}
	return false
}

// hasContainer reports whether spec.containers has one of that name.
func (p *pod) hasContainer(name string) bool {
	for i := range p.containers {
		if p.containers[i].name == name {
			return true
		}
	}
	return false
}

// projectedVolume reports whether the Pod has a projected volume called
// name: the kind the ServiceAccount admission plugin adds for the token.
func (p *pod) projectedVolume(name string) bool {
	for i, v := range p.volumes {
		if v != name || i >= len(p.volumeRaw) {
			continue
		}
		found := false
		sc := scanner{s: p.volumeRaw[i]}
		err := eachKey(&sc, func(k string) error {
			found = found || k == "projected" && sc.peek() == '{'
			return sc.skip()
		})
		return err == nil && found
	}
	return false
}

// hasInit reports whether spec.initContainers has one of that name.
func (p *pod) hasInit(name string) bool {
	for i := range p.initContainers {
		if p.initContainers[i].name == name {
			return true
		}
	}
	return false
}

// parsePodMeta reads the Pod's metadata and notes where its spec is, so
// the policy can skip a Pod on its labels before the spec is read.
func parsePodMeta(obj string, p *pod) error {
	sc := scanner{s: obj}
	return parsePodMetaAt(&sc, p)
}

// parsePodMetaAt is parsePodMeta for the object at sc, which it consumes.
func parsePodMetaAt(sc *scanner, p *pod) error {
	p.reset()
	var seen keySeen
	var sawMeta bool
	err := eachKey(sc, func(k string) error {
		switch k {
		case "metadata":
			if err := seen.once(0, k); err != nil {
				return err
			}
			// A null or scalar metadata could not take the annotations
			// graft adds: refuse it rather than answer with a patch that
			// cannot apply.
			if sc.peek() != '{' {
				return errSyntax
			}
			sawMeta = true
			return parseMetadata(sc, p)
		case "spec":
			if err := seen.once(1, k); err != nil {
				return err
			}
			start := sc.i
			if sc.peek() != '{' {
				return errSyntax
			}
			err := sc.skipComposite()
			p.spec = sc.s[start:sc.i]
			return err
		}
		return sc.skip()
	})
	if err == nil && (!sawMeta || p.spec == "") {
		return errNoMetaOrSpec
	}
	p.metaRead = err == nil
	return err
}

var errNoMetaOrSpec = errors.New("metadata or spec missing")

// parsePodSpec reads the spec found by parsePodMeta, within budget b
// (errBudget once spent; nil: no bound).
func parsePodSpec(p *pod, b *budget) error {
	sc := scanner{s: p.spec, b: b}
	return parseSpec(&sc, p)
}

func parseMetadata(sc *scanner, p *pod) error {
	var seen keySeen
	return eachKey(sc, func(k string) error {
		var err error
		switch k {
		case "name":
			if err = seen.once(0, k); err == nil {
				p.name, err = optString(sc)
			}
		case "generateName":
			if err = seen.once(1, k); err == nil {
				p.generateName, err = optString(sc)
			}
		case "annotations":
			if err = seen.once(2, k); err == nil {
				if p.annotations = member(sc); p.annotations == present {
					p.annotationKeys, err = parseStringMap(sc, p.annotationKeys, false, &p.keysBuf)
				}
			}
		case "labels":
			if err = seen.once(3, k); err == nil {
				if p.labels = member(sc); p.labels == present {
					p.labelKeys, err = parseStringMap(sc, p.labelKeys, true, &p.keysBuf)
				}
			}
		// Revision routing (routing.go) reads these two, and stops
		// early: a repeat is refused here, where the whole Pod is read.
		case "namespace":
			if err = seen.once(4, k); err == nil {
				err = sc.skip()
			}
		case "ownerReferences":
			if err = seen.once(5, k); err == nil {
				err = sc.skip()
			}
		default:
			err = sc.skip()
		}
		return err
	})
}

// parseStringMap appends the members of a map[string]string. Values are
// canonical when canon is set (labels: the engine compares them), else
// raw JSON string content (annotations: graft decodes the few it reads,
// and the API server escapes <, > and & in them, as Go's encoder does,
// which canonical would rewrite at a cost). Values that are not strings
// are kept empty: the API server would reject them anyway. A key given
// twice is an error; buf is working memory for that check.
func parseStringMap(sc *scanner, dst []kv, canon bool, buf *[]string) ([]kv, error) {
	from := len(dst)
	err := eachKey(sc, func(k string) error {
		if sc.peek() != '"' {
			dst = append(dst, kv{key: k})
			return sc.skip()
		}
		var v string
		var err error
		if canon {
			v, err = sc.value()
		} else {
			v, _, err = sc.str()
		}
		dst = append(dst, kv{key: k, value: v})
		return err
	})
	if err == nil {
		err = duplicateKey(dst[from:], buf)
	}
	return dst, err
}

// duplicateKey returns an error naming a key kvs holds twice, or nil.
// Small maps (labels, annotations are a handful) are compared pairwise;
// larger ones sorted in buf.
func duplicateKey(kvs []kv, buf *[]string) error {
	if len(kvs) <= 16 {
		for i := range kvs {
			for j := i + 1; j < len(kvs); j++ {
				if kvs[i].key == kvs[j].key {
					return &duplicateKeyError{key: kvs[i].key}
				}
			}
		}
		return nil
	}
	keys := (*buf)[:0]
	for _, e := range kvs {
		keys = append(keys, e.key)
	}
	slices.Sort(keys)
	*buf = keys
	for i := 1; i < len(keys); i++ {
		if keys[i] == keys[i-1] {
			return &duplicateKeyError{key: keys[i]}
		}
	}
	return nil
}

func parseSpec(sc *scanner, p *pod) error {
	var seen keySeen
	return eachKey(sc, func(k string) error {
		switch k {
		case "hostNetwork":
			if err := seen.once(0, k); err != nil || sc.isNull() {
				return err
			}
			var err error
			p.hostNetwork, err = sc.boolean()
			return err
		case "automountServiceAccountToken":
			if err := seen.once(1, k); err != nil || sc.isNull() {
				return err
			}
			on, err := sc.boolean()
			p.automountOff = !on
			return err
		case "containers":
			if err := seen.once(2, k); err != nil {
				return err
			}
			if p.containersSeen = member(sc); p.containersSeen == isNull {
				return nil
			}
			return eachElem(sc, func() error { return parseContainer(sc, p) })
		case "initContainers":
			if err := seen.once(3, k); err != nil {
				return err
			}
			if p.inits = member(sc); p.inits == isNull {
				return nil
			}
			return eachElem(sc, func() error { return parseInitContainer(sc, p) })
		case "volumes":
			if err := seen.once(4, k); err != nil {
				return err
			}
			if p.vols = member(sc); p.vols == isNull {
				return nil
			}
			return parseNamedRaw(sc, &p.volumes, &p.volumeRaw)
		case "os":
			if err := seen.once(6, k); err != nil {
				return err
			}
			return parseOSName(sc, &p.os)
		case "nodeSelector":
			if err := seen.once(7, k); err != nil {
				return err
			}
			return parseNodeSelector(sc, &p.os)
		case "affinity":
			if err := seen.once(8, k); err != nil {
				return err
			}
			return parseAffinity(sc, &p.os)
		case "securityContext":
			if err := seen.once(9, k); err != nil {
				return err
			}
			var err error
			p.uid, err = parseRunAsUser(sc)
			return err
		case "resources":
			if err := seen.once(10, k); err != nil {
				return err
			}
			return parsePodResources(sc, p)
		case "imagePullSecrets":
			if err := seen.once(5, k); err != nil {
				return err
			}
			if p.secrets = member(sc); p.secrets == isNull {
				return nil
			}
			return parseNamed(sc, &p.pullSecrets)
		}
		return sc.skip()
	})
}

func parseInitContainer(sc *scanner, p *pod) error {
	var c initContainer
	var seen keySeen
	sc.peek()
	start := sc.i
	err := eachKey(sc, func(k string) error {
		var err error
		switch k {
		case "name":
			if err = seen.once(0, k); err == nil {
				c.name, err = optString(sc)
			}
		case "restartPolicy":
			if err = seen.once(1, k); err != nil {
				return err
			}
			if c.restart = member(sc); c.restart == present {
				var rp string
				rp, err = optString(sc)
				c.sidecar = rp == "Always"
			}
		case "volumeMounts":
			if err = seen.once(2, k); err == nil && member(sc) == present {
				err = eachMount(sc, func(m mount) {
					if m.path == tokenMountPath {
						c.tokenPath, c.tokenVolume = true, m.name
					}
				})
			}
		case "ports":
			if err = seen.once(3, k); err == nil {
				err = parsePorts(sc, p, len(p.initContainers), true)
			}
		case "securityContext":
			if err = seen.once(4, k); err == nil {
				c.uid, err = parseRunAsUser(sc)
			}
		default:
			err = sc.skip()
		}
		return err
	})
	c.raw = sc.s[start:sc.i]
	p.initContainers = append(p.initContainers, c)
	return err
}

// parseNamed appends the name of each object in the array at sc.
func parseNamed(sc *scanner, dst *[]string) error {
	return parseNamedRaw(sc, dst, nil)
}

// parseNamedRaw is parseNamed that also appends each object's JSON to
// raws, when not nil.
func parseNamedRaw(sc *scanner, dst, raws *[]string) error {
	return eachElem(sc, func() error {
		sc.peek()
		start := sc.i
		var name string
		var seen keySeen
		err := eachKey(sc, func(k string) error {
			if k == "name" {
				err := seen.once(0, k)
				if err == nil {
					name, err = optString(sc)
				}
				return err
			}
			return sc.skip()
		})
		*dst = append(*dst, name)
		if raws != nil {
			*raws = append(*raws, sc.s[start:sc.i])
		}
		return err
	})
}

func parseContainer(sc *scanner, p *pod) error {
	c := container{envFrom: len(p.envNames), envTo: len(p.envNames), mountsFrom: len(p.mounts), mountsTo: len(p.mounts)}
	var seen keySeen
	sc.peek()
	start := sc.i
	err := eachKey(sc, func(k string) error {
		var err error
		switch k {
		case "name":
			if err = seen.once(0, k); err == nil {
				c.name, err = optString(sc)
			}
		case "env":
			if err = seen.once(1, k); err != nil {
				return err
			}
			if c.env = member(sc); c.env == present {
				c.envFrom = len(p.envNames)
				err = parseNamedRaw(sc, &p.envNames, &p.envRaw)
				c.envTo = len(p.envNames)
			}
		case "volumeMounts":
			if err = seen.once(2, k); err != nil {
				return err
			}
			if c.volumeMounts = member(sc); c.volumeMounts == present {
				c.mountsFrom = len(p.mounts)
				err = eachMount(sc, func(m mount) { p.mounts = append(p.mounts, m) })
				c.mountsTo = len(p.mounts)
			}
		case "ports":
			if err = seen.once(3, k); err == nil {
				err = parsePorts(sc, p, len(p.containers), false)
			}
		case "securityContext":
			if err = seen.once(4, k); err == nil {
				c.uid, err = parseRunAsUser(sc)
			}
		default:
			err = sc.skip()
		}
		return err
	})
	c.envCount = c.envTo - c.envFrom
	c.mountsCount = c.mountsTo - c.mountsFrom
	c.raw = sc.s[start:sc.i]
	p.containers = append(p.containers, c)
	return err
}

// eachMount calls fn with the name and path of each volume mount in the
// array at sc.
func eachMount(sc *scanner, fn func(mount)) error {
	return eachElem(sc, func() error {
		var m mount
		var seen keySeen
		err := eachKey(sc, func(k string) error {
			var err error
			switch k {
			case "name":
				if err = seen.once(0, k); err == nil {
					m.name, err = optString(sc)
				}
			case "mountPath":
				if err = seen.once(1, k); err == nil {
					m.path, err = optString(sc)
				}
			default:
				err = sc.skip()
			}
			return err
		})
		fn(m)
		return err
	})
}
