package inject

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// Comparing an object of the Pod with graft's render of it: own.go asks
// whether a container, init container or volume named like graft's is
// what graft renders for this Pod (docs/concepts/guarantee.md).
//
// Why a comparator of our own: the Pod's side is the request's bytes,
// which the engine reads in place and must not decode (a typed decode of
// one container costs tens of allocations), and the question is not JSON
// equality. The API server re-encodes what graft sent (key order, number
// and string spellings), drops the zero values of fields that omit them,
// defaults fields graft left unset, and its ServiceAccount plugin adds a
// token mount; and some fields are not compared at all. So graft's side
// is parsed once per plan into a tree (rnode) of the render as the API
// server would store it, and the Pod's value is streamed against it with
// the scanner, key by key, allocating nothing.

// rnode is one value of a render, as the API server stores it.
type rnode struct {
	kind byte     // '{', '[', '"', '0' (a number), 't', 'f' or 'n'
	str  string   // a string's value, a number's text
	keys []string // an object's keys
	vals []*rnode // an object's values by key; an array's elements
	// enc are the value's usual spellings: as a Go encoder writes the
	// typed object (struct field order), so with the API server's
	// defaults set (what it sends graft on a reinvocation), and with
	// keys sorted (what graft's patch adds, what a manifest injected by
	// graft holds); "" where one is another's. A Pod's value spelled any
	// of these ways is the value, found with one comparison of bytes.
	enc [3]string
}

// newRender parses a rendered element (raw JSON) as the API server
// stores it: decoded into typ, the element's Kubernetes type, and encoded
// again, which leaves out the zero values of fields that omit them (a
// template's readOnly: false never reaches the stored Pod) and spells
// quantities canonically.
func newRender(raw []byte, typ any) (*rnode, error) {
	if err := json.Unmarshal(raw, typ); err != nil {
		return nil, err
	}
	stored, err := json.Marshal(typ)
	if err != nil {
		return nil, err
	}
	sc := scanner{s: string(stored)}
	n, err := treeOf(&sc)
	if err != nil {
		return nil, err
	}
	setDefaults(typ)
	if defaulted, err := json.Marshal(typ); err == nil && string(defaulted) != string(stored) {
		sc = scanner{s: string(defaulted)}
		d, err := treeOf(&sc)
		if err != nil {
			return nil, err
		}
		n.alsoSpelled(d)
	}
	return n, nil
}

// alsoSpelled records, on n and its members, the spellings of d, the
// same value with the API server's defaults set, where they differ.
func (n *rnode) alsoSpelled(d *rnode) {
	if d.kind != n.kind {
		return
	}
	if d.enc[0] != n.enc[0] {
		n.enc[1] = d.enc[0]
	}
	switch n.kind {
	case '{':
		for i, k := range n.keys {
			if j := d.index(k); j >= 0 {
				n.vals[i].alsoSpelled(d.vals[j])
			}
		}
	case '[':
		for i := range min(len(n.vals), len(d.vals)) {
			n.vals[i].alsoSpelled(d.vals[i])
		}
	}
}

// setDefaults sets in a rendered container or volume the defaults the
// API server sets in a Pod's (defaulted below), so that newRender knows
// how it spells graft's objects on a reinvocation.
func setDefaults(typ any) {
	switch x := typ.(type) {
	case *corev1.Container:
		for i := range x.Ports {
			if x.Ports[i].Protocol == "" {
				x.Ports[i].Protocol = corev1.ProtocolTCP
			}
		}
		for i := range x.Env {
			if vf := x.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
				vf.FieldRef.APIVersion = "v1"
			}
		}
		for _, p := range []*corev1.Probe{x.LivenessProbe, x.ReadinessProbe, x.StartupProbe} {
			if p == nil {
				continue
			}
			for _, f := range []struct {
				v   *int32
				def int32
			}{{&p.TimeoutSeconds, 1}, {&p.PeriodSeconds, 10}, {&p.SuccessThreshold, 1}, {&p.FailureThreshold, 3}} {
				if *f.v == 0 {
					*f.v = f.def
				}
			}
			httpGetDefaults(p.HTTPGet)
		}
		if l := x.Lifecycle; l != nil {
			for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
				if h != nil {
					httpGetDefaults(h.HTTPGet)
				}
			}
		}
	case *corev1.Volume:
		mode := int32(corev1.SecretVolumeSourceDefaultMode) // 0644, as for the others
		switch {
		case x.Secret != nil && x.Secret.DefaultMode == nil:
			x.Secret.DefaultMode = &mode
		case x.ConfigMap != nil && x.ConfigMap.DefaultMode == nil:
			x.ConfigMap.DefaultMode = &mode
		case x.DownwardAPI != nil && x.DownwardAPI.DefaultMode == nil:
			x.DownwardAPI.DefaultMode = &mode
		case x.Projected != nil && x.Projected.DefaultMode == nil:
			x.Projected.DefaultMode = &mode
		}
	}
}

func httpGetDefaults(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// treeOf parses the value at sc into a tree.
func treeOf(sc *scanner) (*rnode, error) {
	sc.peek()
	start := sc.i
	n := &rnode{kind: sc.peek()}
	var err error
	switch n.kind {
	case '{':
		err = eachKey(sc, func(k string) error {
			v, err := treeOf(sc)
			n.keys, n.vals = append(n.keys, k), append(n.vals, v)
			return err
		})
	case '[':
		err = eachElem(sc, func() error {
			v, err := treeOf(sc)
			n.vals = append(n.vals, v)
			return err
		})
	case '"':
		var raw string
		var esc bool
		if raw, esc, err = sc.str(); err == nil {
			n.str, err = unquoteRaw(raw, esc)
		}
	case 't', 'f', 'n':
		err = sc.skip()
	default:
		n.kind = '0'
		n.str, err = sc.number()
	}
	if err != nil {
		return nil, err
	}
	n.enc[0] = sc.s[start:sc.i]
	if n.kind == '{' || n.kind == '[' {
		var v any
		dec := json.NewDecoder(strings.NewReader(n.enc[0]))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		sorted, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		if string(sorted) != n.enc[0] {
			n.enc[2] = string(sorted)
		}
	}
	return n, nil
}

// spelled reports whether the value at sc is spelled as one of n's
// usual spellings, and if so consumes it.
func (n *rnode) spelled(sc *scanner) bool {
	rest := sc.s[sc.i:]
	for _, e := range n.enc {
		if e == "" || !strings.HasPrefix(rest, e) {
			continue
		}
		// A string, object or list ends where its spelling does; a
		// number or literal must not go on.
		if k := n.kind; k == '0' || k == 't' || k == 'f' || k == 'n' {
			if len(rest) > len(e) && strings.IndexByte("0123456789+-.eE", rest[len(e)]) >= 0 {
				continue
			}
		}
		sc.i += len(e)
		return true
	}
	return false
}

// noMounts stands for the volumeMounts of a render that has none.
var noMounts = &rnode{kind: '['}

// index returns the index of key in an object node, or -1.
func (n *rnode) index(key string) int {
	for i, k := range n.keys {
		if k == key {
			return i
		}
	}
	return -1
}

// is reports whether n is the scalar def (JSON text; "" is no value).
func (n *rnode) is(def string) bool {
	switch {
	case def == "":
		return false
	case def[0] == '"':
		return n.kind == '"' && n.str == def[1:len(def)-1]
	}
	return n.kind == '0' && sameNumber(n.str, def)
}

// empty reports whether n says nothing: null, "", [] or {}.
func (n *rnode) empty() bool {
	switch n.kind {
	case 'n':
		return true
	case '"':
		return n.str == ""
	case '{', '[':
		return len(n.vals) == 0
	}
	return false
}

// shape is what the comparator knows of the object it is in: which of
// its fields the API server defaults when they are unset, and to what
// (k8s.io/kubernetes pkg/apis/core/v1 defaults.go and
// zz_generated.defaults.go, SetObjectDefaults_Pod), and which are not
// compared.
type shape uint8

const (
	shPlain shape = iota
	shContainer
	shMounts // a container's volumeMounts: the token mount may be added
	shPort
	shProbe
	shHTTPGet
	shLifecycle
	shHandler
	shEnv
	shEnvSource
	shFieldRef
	shResourceFieldRef
	shVolume
	shModed // secret, configMap, downwardAPI, projected: defaultMode
	shItem  // a downwardAPI item
	shSource
	shSAToken
	shEphemeral
	shClaimTemplate
	shClaimSpec
	shISCSI
	shRBD
	shAzureDisk
	shScaleIO
	shImage
)

// child is the shape of the value of key in an object of shape sh (of
// each element, when that value is a list).
func (sh shape) child(key string) shape {
	switch sh {
	case shContainer:
		switch key {
		case "ports":
			return shPort
		case "env":
			return shEnv
		case "volumeMounts":
			return shMounts
		case "livenessProbe", "readinessProbe", "startupProbe":
			return shProbe
		case "lifecycle":
			return shLifecycle
		}
	case shProbe, shHandler:
		if key == "httpGet" {
			return shHTTPGet
		}
	case shLifecycle:
		if key == "postStart" || key == "preStop" {
			return shHandler
		}
	case shEnv:
		if key == "valueFrom" {
			return shEnvSource
		}
	case shEnvSource, shItem:
		switch key {
		case "fieldRef":
			return shFieldRef
		case "resourceFieldRef":
			return shResourceFieldRef
		}
	case shVolume:
		switch key {
		case "secret", "configMap", "downwardAPI", "projected":
			return shModed
		case "ephemeral":
			return shEphemeral
		case "iscsi":
			return shISCSI
		case "rbd":
			return shRBD
		case "azureDisk":
			return shAzureDisk
		case "scaleIO":
			return shScaleIO
		case "image":
			return shImage
		}
	case shModed:
		switch key {
		case "items":
			return shItem
		case "sources":
			return shSource
		}
	case shSource:
		switch key {
		case "downwardAPI":
			return shModed
		case "serviceAccountToken":
			return shSAToken
		}
	case shEphemeral:
		if key == "volumeClaimTemplate" {
			return shClaimTemplate
		}
	case shClaimTemplate:
		if key == "spec" {
			return shClaimSpec
		}
	}
	return shPlain
}

// ignored reports whether key of an object of shape sh is not compared:
// LimitRanger, in-place resize and autoscalers change resources, and the
// rest carry no privilege (imagePullPolicy is also what a default-off
// plugin, AlwaysPullImages, rewrites).
func (sh shape) ignored(key string) bool {
	switch sh {
	case shContainer:
		switch key {
		case "resources", "resizePolicy", "imagePullPolicy", "terminationMessagePath",
			"terminationMessagePolicy", "stdin", "stdinOnce", "tty":
			return true
		}
	case shImage:
		return key == "pullPolicy"
	}
	return false
}

// defaulted returns the value, as JSON, the API server gives key in an
// object of shape sh when it is unset; "" when it gives none. Defaults
// to zero values ("", false) need no entry: an unset field and its zero
// value compare equal (see extraOK).
func (sh shape) defaulted(key string) string {
	switch sh {
	case shPort:
		if key == "protocol" {
			return `"TCP"`
		}
	case shProbe:
		switch key {
		case "timeoutSeconds", "successThreshold":
			return "1"
		case "periodSeconds":
			return "10"
		case "failureThreshold":
			return "3"
		}
	case shHTTPGet:
		switch key {
		case "path":
			return `"/"`
		case "scheme":
			return `"HTTP"`
		case "protocol": // H2CContainerProbe
			return `"HTTP1"`
		}
	case shFieldRef:
		if key == "apiVersion" {
			return `"v1"`
		}
	case shResourceFieldRef:
		// Not a default: the divisor is a Quantity, a struct that a typed
		// encoding always writes, as "0" when unset.
		if key == "divisor" {
			return `"0"`
		}
	case shModed:
		if key == "defaultMode" {
			return "420"
		}
	case shSAToken:
		if key == "expirationSeconds" {
			return "3600"
		}
	case shClaimSpec:
		if key == "volumeMode" {
			return `"Filesystem"`
		}
	case shISCSI:
		if key == "iscsiInterface" {
			return `"default"`
		}
	case shRBD:
		switch key {
		case "pool":
			return `"rbd"`
		case "user":
			return `"admin"`
		case "keyring":
			return `"/etc/ceph/keyring"`
		}
	case shAzureDisk:
		switch key {
		case "cachingMode":
			return `"ReadWrite"`
		case "fsType":
			return `"ext4"`
		case "kind":
			return `"Shared"`
		}
	case shScaleIO:
		switch key {
		case "storageMode":
			return `"ThinProvisioned"`
		case "fsType":
			return `"xfs"`
		}
	}
	return ""
}

// maxPath is how deep a difference's location is kept.
const maxPath = 8

// step is one step of a location: an object's key, or a list's index.
type step struct {
	key   string
	index int // -1 for a key
}

// differ compares one object of the Pod with graft's render of it and,
// when they differ, keeps where (the first difference it met).
type differ struct {
	p *pod
	b *budget
	// tokenOK: graft's container gets the ServiceAccount token mount
	// (it has none at the token path), which may then be in the Pod's.
	tokenOK bool
	// skipRestart leaves restartPolicy out (repair.go restores it).
	skipRestart bool

	path     [maxPath]step
	depth    int
	at       [maxPath]step
	atDepth  int
	differed bool
}

// errDiffers stops a walk at the first difference.
var errDiffers = errors.New("differs")

func (d *differ) push(s step) {
	if d.depth < maxPath {
		d.path[d.depth] = s
	}
	d.depth++
}

func (d *differ) pop() { d.depth-- }

// differ records the current location, plus s, as the difference.
func (d *differ) differ(s step) error {
	if !d.differed {
		d.differed = true
		d.push(s)
		d.atDepth = min(d.depth, maxPath)
		d.at = d.path
		d.pop()
	}
	return errDiffers
}

// same compares the Pod's value at sc (consumed) with n, in shape sh.
func (d *differ) same(sc *scanner, n *rnode, sh shape) bool {
	err := d.value(sc, n, sh)
	if err != nil && !d.differed {
		// Text the API server never sends (the engine reads composite
		// values it does not need without checking them): not graft's.
		d.differ(step{index: -1})
	}
	return err == nil
}

func (d *differ) value(sc *scanner, n *rnode, sh shape) error {
	if d.b != nil && d.b.spent() {
		return errBudget
	}
	c := sc.peek()
	kind := c
	if c == '-' || c >= '0' && c <= '9' {
		kind = '0'
	}
	if kind == n.kind && n.spelled(sc) {
		return nil
	}
	switch {
	case c == 'n':
		if !sc.isNull() {
			return errSyntax
		}
		if !n.empty() {
			return d.differ(step{index: -1})
		}
		return nil
	}
	if kind != n.kind {
		// Another type: equal only when both say nothing ("", [], {}).
		if n.empty() {
			empty, err := emptyValue(sc)
			if err != nil || !empty {
				return cmpOr(err, d.differ(step{index: -1}))
			}
			return nil
		}
		return d.differ(step{index: -1})
	}
	switch kind {
	case '{':
		return d.object(sc, n, sh)
	case '[':
		return d.array(sc, n, sh)
	case '"':
		raw, esc, err := sc.str()
		if err != nil {
			return err
		}
		if raw != n.str && (!esc || !sameValue(raw, n.str)) {
			return d.differ(step{index: -1})
		}
	case '0':
		text, err := sc.number()
		if err != nil {
			return err
		}
		if !sameNumber(text, n.str) {
			return d.differ(step{index: -1})
		}
	case 't':
		return sc.lit("true")
	case 'f':
		return sc.lit("false")
	default:
		return errSyntax
	}
	return nil
}

func cmpOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// object compares the Pod's object at sc with the object node n. Keys
// are matched by name in any order; a key on one side only must say
// nothing, or hold the value the API server defaults it to (extraOK;
// for the render's side: null, "", [], {} or the default).
func (d *differ) object(sc *scanner, n *rnode, sh shape) error {
	// Which of n's keys the Pod has: a render object has a few dozen
	// keys at most (a container's fields); more than 256 is not one the
	// comparator takes.
	var seen [4]uint64
	if len(n.keys) > 256 {
		return d.differ(step{index: -1})
	}
	err := eachKey(sc, func(k string) error {
		if d.b != nil && d.b.spent() {
			return errBudget
		}
		if sh.ignored(k) || d.skipRestart && sh == shContainer && k == "restartPolicy" {
			return sc.skip()
		}
		i := n.index(k)
		if i < 0 && sh.child(k) == shMounts {
			// A render without mounts: the token's may be there alone.
			d.push(step{key: k, index: -1})
			err := d.value(sc, noMounts, shMounts)
			d.pop()
			return err
		}
		if i < 0 {
			if ok, err := d.extraOK(sc, sh, k, n); ok && err == nil {
				return nil
			}
			return d.differ(step{key: k, index: -1})
		}
		if seen[i/64]&(1<<(i%64)) != 0 {
			return d.differ(step{key: k, index: -1}) // a key given twice
		}
		seen[i/64] |= 1 << (i % 64)
		d.push(step{key: k, index: -1})
		err := d.value(sc, n.vals[i], sh.child(k))
		d.pop()
		return err
	})
	if err != nil {
		return err
	}
	for i, k := range n.keys {
		if seen[i/64]&(1<<(i%64)) != 0 || sh.ignored(k) || d.skipRestart && sh == shContainer && k == "restartPolicy" {
			continue
		}
		if v := n.vals[i]; !v.empty() && !v.is(sh.defaulted(k)) {
			return d.differ(step{key: k, index: -1})
		}
	}
	return nil
}

// extraOK consumes the Pod's value of key, which the render of shape sh
// (the object n) lacks, and reports whether it may be there: it says
// nothing (null, "", false, [] or {}: the field's zero value, which a
// typed encoding leaves out and no Pod field reads other than as unset),
// or it is the value the API server defaults the field to. 0 is not
// nothing: runAsUser: 0 is root.
func (d *differ) extraOK(sc *scanner, sh shape, key string, n *rnode) (bool, error) {
	switch c := sc.peek(); {
	case c == 'f':
		return true, sc.lit("false")
	case c == 't':
		return false, sc.lit("true")
	case c == 'n':
		if !sc.isNull() {
			return false, errSyntax
		}
		return true, nil
	case c == '{' || c == '[':
		return emptyValue(sc)
	}
	def := sh.defaulted(key)
	if sh == shPort && key == "hostPort" && d.p != nil && d.p.hostNetwork {
		// A hostNetwork Pod's ports get hostPort = containerPort.
		if i := n.index("containerPort"); i >= 0 {
			def = n.vals[i].str
		}
	}
	if sc.peek() == '"' {
		raw, esc, err := sc.str()
		if err != nil {
			return false, err
		}
		if raw == "" {
			return true, nil
		}
		return len(def) > 2 && def[0] == '"' && (raw == def[1:len(def)-1] || esc && sameValue(raw, def[1:len(def)-1])), nil
	}
	text, err := sc.number()
	if err != nil {
		return false, err
	}
	return def != "" && def[0] != '"' && sameNumber(text, def), nil
}

// emptyValue consumes a value and reports whether it says nothing.
func emptyValue(sc *scanner) (bool, error) {
	switch sc.peek() {
	case '{', '[':
		start := sc.i
		sc.i++
		closer := sc.peek()
		if closer == '}' || closer == ']' {
			sc.i++
			return true, nil
		}
		sc.i = start
	case '"':
		raw, _, err := sc.str()
		return raw == "", err
	case 'n':
		return sc.isNull(), nil
	}
	return false, sc.skip()
}

// array compares the Pod's list at sc with the list node n, in order.
// In a container's volumeMounts (shMounts) one more mount may be there:
// the ServiceAccount token's, as its admission plugin adds it.
func (d *differ) array(sc *scanner, n *rnode, sh shape) error {
	i, j := 0, 0 // the next of n's elements, and of the Pod's
	token := sh == shMounts && d.tokenOK
	elem := sh
	if sh == shMounts {
		elem = shPlain
	}
	err := eachElem(sc, func() error {
		pos := j
		j++
		if token {
			at := sc.i
			if ok, _ := d.tokenMount(sc); ok {
				token = false
				return nil
			}
			sc.i = at
		}
		if i >= len(n.vals) {
			return d.differ(step{index: pos})
		}
		d.push(step{index: pos})
		err := d.value(sc, n.vals[i], elem)
		d.pop()
		i++
		return err
	})
	if err != nil {
		return err
	}
	if i < len(n.vals) {
		return d.differ(step{index: j})
	}
	return nil
}

// tokenMount consumes a volume mount and reports whether it is the one
// the ServiceAccount admission plugin adds to every container: the
// Pod's projected kube-api-access- volume, read-only, at the token path,
// and nothing else.
func (d *differ) tokenMount(sc *scanner) (bool, error) {
	var name string
	path, readOnly, other := false, false, false
	err := eachKey(sc, func(k string) error {
		var err error
		switch k {
		case "name":
			name, err = sc.value()
		case "mountPath":
			var v string
			v, err = sc.value()
			path = v == tokenMountPath
		case "readOnly":
			readOnly, err = sc.boolean()
		default:
			var empty bool
			empty, err = emptyValue(sc)
			other = other || !empty
		}
		return err
	})
	if err != nil || other || !path || !readOnly || !strings.HasPrefix(name, tokenVolumePrefix) || d.p == nil {
		return false, err
	}
	return d.p.projectedVolume(name), nil
}

// number reads a number's text.
func (sc *scanner) number() (string, error) {
	if c := sc.peek(); c != '-' && (c < '0' || c > '9') {
		return "", errSyntax
	}
	start := sc.i
	if err := sc.skip(); err != nil {
		return "", err
	}
	return sc.s[start:sc.i], nil
}

// sameNumber reports whether two JSON numbers are one value.
func sameNumber(a, b string) bool {
	if a == b {
		return true
	}
	if x, err := strconv.ParseInt(a, 10, 64); err == nil {
		if y, err := strconv.ParseInt(b, 10, 64); err == nil {
			return x == y
		}
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}

// sameValue reports whether raw JSON string content holds the value v.
// The runs between escapes are compared as they are (a sidecar's
// arguments hold kilobytes of configuration with a few escaped newlines
// and quotes); each escape is decoded and compared with v's encoding of
// it.
func sameValue(raw, v string) bool {
	for {
		i := strings.IndexByte(raw, '\\')
		if i < 0 {
			return raw == v
		}
		if len(v) < i || raw[:i] != v[:i] {
			return false
		}
		r, n := decodeRune(raw, i)
		if n == 0 {
			return false
		}
		var buf [utf8.UTFMax]byte
		m := utf8.EncodeRune(buf[:], r)
		if len(v) < i+m || string(buf[:m]) != v[i:i+m] {
			return false
		}
		raw, v = raw[i+n:], v[i+m:]
	}
}

// sameContent reports whether two raw JSON string contents hold one
// value, however each is escaped.
func sameContent(a, b string) bool {
	if a == b {
		return true
	}
	if strings.IndexByte(a, '\\') < 0 && strings.IndexByte(b, '\\') < 0 {
		return false
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		r, n := decodeRune(a, i)
		w, m := decodeRune(b, j)
		if n == 0 || m == 0 || r != w {
			return false
		}
		i, j = i+n, j+m
	}
	return i == len(a) && j == len(b)
}

// decodeRune decodes the character of raw JSON string content at i and
// returns it with its length there (0 for an invalid escape).
func decodeRune(raw string, i int) (rune, int) {
	c := raw[i]
	if c != '\\' {
		if c < utf8.RuneSelf {
			return rune(c), 1
		}
		return utf8.DecodeRuneInString(raw[i:])
	}
	if i+1 >= len(raw) {
		return 0, 0
	}
	switch e := raw[i+1]; e {
	case '"', '\\', '/':
		return rune(e), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, n, ok := readU(raw[i:])
		if !ok {
			return 0, 0
		}
		return r, n
	}
	return 0, 0
}

// appendWhere appends the location of d's difference: `securityContext.
// capabilities.add[0]`; "" for the object itself.
func (d *differ) appendWhere(dst []byte) []byte {
	start := len(dst)
	for _, s := range d.at[:d.atDepth] {
		switch {
		case s.index >= 0:
			dst = append(dst, '[')
			dst = strconv.AppendInt(dst, int64(s.index), 10)
			dst = append(dst, ']')
		case s.key != "":
			if len(dst) > start {
				dst = append(dst, '.')
			}
			dst = append(dst, s.key...)
		}
	}
	return dst
}

// where is the difference's location, for explain and tests.
func (d *differ) where() string { return string(d.appendWhere(nil)) }
