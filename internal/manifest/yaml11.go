package manifest

import (
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// kubectl reads manifests as YAML 1.1 (sigs.k8s.io/yaml, which decodes
// with go-yaml v2 and then turns every mapping key into a string); graft
// parses them as YAML 1.2 (go-yaml v3). The two resolve plain scalars
// alike but for the sixteen YAML 1.1 booleans y, yes, on, n, no, off (in
// their three cases), which YAML 1.2 reads as strings, and for the keys
// kubectl rewrites as it turns them into strings: on becomes "true", 010
// becomes "8", 1.0 becomes "1", and a null key is refused.
//
// The rule: graft reads every value as kubectl sends it (NodeJSON: an
// unquoted yes is true, as runAsNonRoot: yes means), except where that
// is a boolean in a place Kubernetes takes only strings and graft reads
// one (apiVersion, kind, an object's name, namespace and generateName,
// its labels and annotations, graft's parameters among them, the names of
// containers, volumes, env vars, mounts and ports): there, and
// for every key kubectl would send as another string, graft refuses the
// document, naming path and value and saying to quote it. Read as kubectl
// sends them, those would fail later, far from the line that caused them
// (a no in metadata.name was "malformed admission review"), or pass
// unseen (labels: {on: yes} is {"true": true}, which the API refuses).

// checkYAML11 returns an error for the first scalar under n (a document)
// that the rule above refuses.
func checkYAML11(n *yaml.Node) error {
	return walkYAML11(n, "", inValue, 0)
}

// place is what a node is to Kubernetes, as far as the rule cares.
type place int

const (
	inValue     place = iota // any value
	inMetadata               // an object's metadata mapping
	inStrings                // labels or annotations: every value a string
	aString                  // a value Kubernetes takes only as a string
	inNamedList              // a list of containers, volumes, env... by name
	inNamed                  // an item of such a list
)

func walkYAML11(n *yaml.Node, path string, at place, depth int) error {
	if depth > maxDepth { // NodeJSON reports the depth
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for i, c := range n.Content {
			p, cat := path, at
			if n.Kind == yaml.SequenceNode {
				p, cat = path+"["+strconv.Itoa(i)+"]", inValue
				if at == inNamedList {
					cat = inNamed
				}
			}
			if err := walkYAML11(c, p, cat, depth+1); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if err := checkKey(k, path); err != nil {
				return err
			}
			if err := walkYAML11(v, joinPath(path, k.Value), childPlace(at, k.Value), depth+1); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if b, ok := plainYAML11Bool(n); ok && (at == aString || at == inStrings) {
			return atErrorf(n.Line, "%s: %s is the boolean %t to kubectl, which reads YAML 1.1, where Kubernetes takes a string: quote it",
				orDocument(path), n.Value, b)
		}
	}
	// Aliases name a node checked where it is anchored.
	return nil
}

// childPlace is what the value of key is in a mapping at at.
func childPlace(at place, key string) place {
	switch at {
	case inStrings:
		return aString
	case inMetadata:
		switch key {
		case "name", "namespace", "generateName":
			return aString
		case "labels", "annotations":
			return inStrings
		}
		return inValue
	case inNamed:
		if key == "name" {
			return aString
		}
	}
	switch key {
	case "containers", "initContainers", "ephemeralContainers", "volumes", "env", "volumeMounts", "ports":
		return inNamedList
	case "metadata":
		return inMetadata
	case "apiVersion", "kind":
		return aString
	}
	return inValue
}

func orDocument(path string) string {
	if path == "" {
		return "the document"
	}
	return path
}

// checkKey refuses a plain mapping key that kubectl would send as
// another string, or not at all.
func checkKey(k *yaml.Node, path string) error {
	if k.Kind != yaml.ScalarNode || k.Style != 0 {
		return nil
	}
	sent, ok := kubectlKey(k)
	if ok && sent == k.Value {
		return nil
	}
	where := orDocument(path)
	if !ok {
		return atErrorf(k.Line, "%s: the key %s is null to kubectl, which reads YAML 1.1 and refuses it: quote it", where, k.Value)
	}
	return atErrorf(k.Line, "%s: the key %s is sent as %q by kubectl, which reads YAML 1.1: quote it to mean %q", where, k.Value, sent, k.Value)
}

// kubectlKey is the JSON key kubectl sends for the plain key k: go-yaml
// v2 resolves it and sigs.k8s.io/yaml formats what is not a string (ok
// is false for a key it refuses).
func kubectlKey(k *yaml.Node) (string, bool) {
	if b, ok := plainYAML11Bool(k); ok {
		return strconv.FormatBool(b), true
	}
	switch k.ShortTag() {
	case "!!null":
		return "", false
	case "!!bool":
		var b bool
		if err := k.Decode(&b); err != nil {
			return "", false
		}
		return strconv.FormatBool(b), true
	case "!!int":
		// go-yaml v2 and v3 resolve integers alike: strconv's base 0
		// after dropping underscores.
		plain := strings.ReplaceAll(k.Value, "_", "")
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return strconv.FormatInt(i, 10), true
		}
		// Past int64, go-yaml gives a uint64, a key type sigs.k8s.io/yaml
		// refuses.
		return "", false
	case "!!float":
		var f float64
		if err := k.Decode(&f); err != nil {
			return "", false
		}
		// As sigs.k8s.io/yaml formats a float key: shortest, as float32.
		s := strconv.FormatFloat(f, 'g', -1, 32)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		return s, true
	}
	// Strings, and timestamps, which go-yaml v2 hands on as written.
	return k.Value, true
}

// plainYAML11Bool reports a plain scalar that YAML 1.1 reads as a boolean
// and YAML 1.2 as a string.
func plainYAML11Bool(n *yaml.Node) (value, ok bool) {
	if n.Kind != yaml.ScalarNode || n.Style != 0 || n.Tag != "!!str" {
		return false, false
	}
	return yaml11Bool(n.Value)
}

// simpleKeyRE matches keys written bare in a path; others are quoted.
var simpleKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinPath appends key to a path such as spec.containers[0].
func joinPath(path, key string) string {
	if !simpleKeyRE.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}
