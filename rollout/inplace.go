package rollout

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
)

// Refusal is why a Pod's sidecars cannot be upgraded in place. The set is
// closed: Refusals lists it, and docs/tasks/rollout.md explains each.
type Refusal string

const (
	// RefuseNotInjected: the Pod has no record of graft (audit: missing).
	RefuseNotInjected Refusal = "not-injected"
	// RefuseLegacyRecord: a version 1 record names no revision or digest.
	RefuseLegacyRecord Refusal = "version-1-record"
	// RefuseRevisionNotServed: the recorded revision is no longer
	// configured, so what it injected cannot be compared.
	RefuseRevisionNotServed Refusal = "revision-not-served"
	// RefuseWouldBeDenied: graft would refuse the Pod now.
	RefuseWouldBeDenied Refusal = "would-be-denied"
	// RefuseIncomplete: the record is current yet graft would still patch
	// the Pod (something graft injected was removed or broken).
	RefuseIncomplete Refusal = "incomplete"
	// RefuseTemplatesChanged: the profile injects other templates now, or
	// templates of one Pod are recorded at different revisions.
	RefuseTemplatesChanged Refusal = "templates-changed"
	// RefuseRecordNotReproducible: injecting the Pod afresh at its
	// recorded revision does not give its record (parameters or the
	// revision's configuration changed since): what changed is unknown.
	RefuseRecordNotReproducible Refusal = "record-not-reproducible"
	// RefuseImageEdited: the running sidecar's image is not the one graft
	// injected (edited after admission): graft does not overwrite it.
	RefuseImageEdited Refusal = "image-edited"
	// RefuseNotNativeSidecar: the image changes in a container or a plain
	// init container, not a native sidecar (restartPolicy: Always).
	RefuseNotNativeSidecar Refusal = "not-native-sidecar"
	// RefuseContainerChanged: a container graft injected changes in more
	// than its image (command, env, ports, probes, resources, ...), or
	// graft's containers are not the same ones.
	RefuseContainerChanged Refusal = "container-changed"
	// RefusePodChanged: something outside graft's containers changes:
	// volumes, the app containers' env or mounts, annotations or labels
	// other than graft's record.
	RefusePodChanged Refusal = "pod-changed"
	// RefuseTerminating: the Pod is being deleted.
	RefuseTerminating Refusal = "terminating"
	// RefuseNotCurrentAfter: with the upgrade applied, the audit would
	// still not call the Pod current (a safety net; never expected).
	RefuseNotCurrentAfter Refusal = "not-current-after"
)

// Refusals lists every refusal, in the order the docs explain them.
func Refusals() []Refusal {
	return []Refusal{RefuseNotInjected, RefuseLegacyRecord, RefuseRevisionNotServed, RefuseWouldBeDenied,
		RefuseIncomplete, RefuseTemplatesChanged, RefuseRecordNotReproducible, RefuseImageEdited,
		RefuseNotNativeSidecar, RefuseContainerChanged, RefusePodChanged, RefuseTerminating, RefuseNotCurrentAfter}
}

// Upgrade is one Pod's in-place upgrade: a JSON patch that sets its
// native sidecars' images and graft's record to exactly what graft would
// inject into the Pod now.
type Upgrade struct {
	Namespace string `json:"-"`
	Name      string `json:"-"`
	UID       string `json:"-"`
	// From and To are the recorded and the target revision.
	From string `json:"from"`
	To   string `json:"to"`
	// Images are the sidecars whose image changes (none: the record only).
	Images []ImageChange `json:"images,omitempty"`
	// Patch is the RFC 6902 patch, with tests of the Pod's uid and
	// resourceVersion so it applies to exactly the Pod it was computed
	// for.
	Patch []byte `json:"-"`
}

// ImageChange is one sidecar's new image.
type ImageChange struct {
	Container string `json:"container"`
	From      string `json:"from"`
	To        string `json:"to"`
}

func (u *Upgrade) String() string {
	var parts []string
	for _, c := range u.Images {
		parts = append(parts, fmt.Sprintf("%s %s -> %s", c.Container, c.From, c.To))
	}
	if len(parts) == 0 {
		parts = append(parts, "record only")
	}
	return fmt.Sprintf("%s -> %s: %s", u.From, u.To, strings.Join(parts, ", "))
}

// Upgrader decides in-place upgrades with the engine graft serve runs and
// the audit's classification.
type Upgrader struct {
	engine  audit.Engine
	auditor *audit.Auditor
}

// NewUpgrader returns an Upgrader running Pods through engine.
func NewUpgrader(engine audit.Engine) *Upgrader {
	return &Upgrader{engine: engine, auditor: audit.New(engine)}
}

// Plan returns p's in-place upgrade, or why there is none (with a line
// for people). v is the audit's verdict on p in ns.
//
// The upgrade is judged on Pods graft injects afresh, never on the
// running Pod, whose containers the API server defaulted and other
// mutators may have edited: the Pod stripped of what its record names is
// injected at the recorded revision, which must reproduce the record
// exactly, and at the target revision; the two may differ only in the
// images of native sidecars, graft's record and the graft.dev/injected
// label. The patch then sets those on the running Pod, and the audit must
// call the result current.
func (u *Upgrader) Plan(ns audit.Namespace, p audit.Pod, v audit.Verdict) (*Upgrade, Refusal, string) {
	if r, why := causeRefusal(v); r != "" {
		return nil, r, why
	}
	running, err := decode(p.JSON)
	if err != nil {
		return nil, RefuseRecordNotReproducible, err.Error()
	}
	meta := object(running, "metadata")
	if meta["deletionTimestamp"] != nil {
		return nil, RefuseTerminating, "the Pod is being deleted"
	}
	st, err := inject.ParseStatus(p.Status)
	if err != nil {
		return nil, RefuseRecordNotReproducible, err.Error()
	}
	from := ""
	for _, t := range st.Templates {
		if from != "" && t.Revision != from {
			return nil, RefuseTemplatesChanged, fmt.Sprintf("templates recorded at revisions %s and %s", from, t.Revision)
		}
		from = t.Revision
	}
	un, err := inject.Uninject(p.JSON)
	if err != nil {
		return nil, RefuseRecordNotReproducible, err.Error()
	}
	stripped := p
	stripped.JSON = un.Pod
	old, err := u.injectAt(stripped, v.Profile, from)
	if err != nil {
		return nil, RefuseRecordNotReproducible, fmt.Sprintf("injecting at revision %s: %v", from, err)
	}
	if got := str(annotations(old)[names.Status]); got != p.Status {
		return nil, RefuseRecordNotReproducible, fmt.Sprintf("revision %s injects another record now than the Pod's", from)
	}
	sel := u.auditor.Select(ns)
	target, err := u.injectAt(stripped, v.Profile, sel.Revision)
	if err != nil {
		return nil, RefuseRecordNotReproducible, fmt.Sprintf("injecting at the target revision: %v", err)
	}
	images, r, why := compare(old, target, &st)
	if r != "" {
		return nil, r, why
	}
	up := &Upgrade{Namespace: p.Namespace, Name: p.Name, UID: str(meta["uid"]), From: from, To: v.Target, Images: images}
	if up.Patch, r, why = patchFor(running, target, images); r != "" {
		return nil, r, why
	}
	// The safety net: the Pod as the patch leaves it is what graft would
	// write for it now.
	after, err := applyPatch(p.JSON, up.Patch)
	if err != nil {
		return nil, RefuseNotCurrentAfter, err.Error()
	}
	check := p
	check.JSON, check.Status, check.HasStatus = after, str(annotations(mustDecode(after))[names.Status]), true
	cv, err := u.auditor.Classify(ns, check)
	if err != nil {
		return nil, RefuseNotCurrentAfter, err.Error()
	}
	if cv.Class != audit.Current {
		return nil, RefuseNotCurrentAfter, fmt.Sprintf("the upgraded Pod would be %s/%s: %s", cv.Class, cv.Cause, cv.Detail)
	}
	return up, "", ""
}

// causeRefusal is the refusal for what the audit found, "" for a stale
// Pod whose revision changed (the one an upgrade in place may help).
func causeRefusal(v audit.Verdict) (Refusal, string) {
	switch {
	case v.Class == audit.Missing:
		return RefuseNotInjected, "the Pod has no record of graft"
	case v.Class != audit.Stale:
		return RefuseIncomplete, "the Pod is " + string(v.Class)
	}
	switch v.Cause {
	case audit.CauseRevision:
		return "", ""
	case audit.CauseLegacyRecord:
		return RefuseLegacyRecord, "a version 1 record names no revision or digest"
	case audit.CauseRevisionGone:
		return RefuseRevisionNotServed, fmt.Sprintf("revision %s is no longer configured", v.Revision)
	case audit.CauseWouldBeDenied:
		return RefuseWouldBeDenied, v.Detail
	case audit.CauseTemplateAbsent:
		return RefuseTemplatesChanged, v.Detail
	}
	return RefuseIncomplete, v.Detail
}

// injectAt is the Pod graft injects from p at revision (a revision or a
// tag; "" the default) with profile.
func (u *Upgrader) injectAt(p audit.Pod, profile, revision string) (map[string]any, error) {
	ex, err := u.engine.Explain(audit.Review(p), inject.Options{Profile: profile, Revision: revision})
	if err != nil {
		return nil, err
	}
	if ex.Result.Decision != inject.DecisionInject || len(ex.Patch) == 0 {
		return nil, fmt.Errorf("graft would not inject it (%s %s)", ex.Result.Decision, ex.Result.Reason)
	}
	after, err := applyPatch(p.JSON, ex.Patch)
	if err != nil {
		return nil, err
	}
	return decode(after)
}

// compare returns the native sidecars whose image differs between the
// Pods graft injects at the recorded (old) and the target revision, or
// the refusal for anything else that differs.
func compare(old, target map[string]any, st *inject.Status) ([]ImageChange, Refusal, string) {
	om, tm := object(old, "metadata"), object(target, "metadata")
	to, err := inject.ParseStatus(str(object(tm, "annotations")[names.Status]))
	if err != nil {
		return nil, RefuseRecordNotReproducible, err.Error()
	}
	if a, b := templateNames(st), templateNames(&to); !slices.Equal(a, b) {
		return nil, RefuseTemplatesChanged, fmt.Sprintf("templates [%s] become [%s]", strings.Join(a, ", "), strings.Join(b, ", "))
	}
	for _, f := range []struct {
		key, mine string
	}{{"labels", names.Injected}, {"annotations", names.Status}} {
		a, b := maps.Clone(object(om, f.key)), maps.Clone(object(tm, f.key))
		delete(a, f.mine)
		delete(b, f.mine)
		if !equalMaps(a, b) {
			return nil, RefusePodChanged, "the Pod's " + f.key + " change: " + strings.Join(changedKeys(a, b), ", ")
		}
	}
	ospec, ts := object(old, "spec"), object(target, "spec")
	var fields []string
	for _, k := range slices.Sorted(maps.Keys(union(ospec, ts))) {
		if k != "initContainers" && k != "containers" && !reflect.DeepEqual(ospec[k], ts[k]) {
			fields = append(fields, "spec."+k)
		}
	}
	if len(fields) > 0 {
		return nil, RefusePodChanged, strings.Join(fields, ", ") + " change"
	}
	graft := st.Injected
	oc, tc := list(ospec, "containers"), list(ts, "containers")
	if r, why := sameNames("containers", oc, tc); r != "" {
		return nil, r, why
	}
	for i := range oc {
		a, b := oc[i].(map[string]any), tc[i].(map[string]any)
		if reflect.DeepEqual(a, b) {
			continue
		}
		n := str(a["name"])
		if !slices.Contains(graft, n) {
			return nil, RefusePodChanged, fmt.Sprintf("app container %s changes: %s", n, strings.Join(changedKeys(a, b), ", "))
		}
		if keys := changedKeys(a, b); slices.Equal(keys, []string{"image"}) {
			return nil, RefuseNotNativeSidecar, fmt.Sprintf("container %s changes image, and is not a native sidecar", n)
		}
		return nil, RefuseContainerChanged, fmt.Sprintf("container %s changes: %s", n, strings.Join(changedKeys(a, b), ", "))
	}
	oi, ti := list(ospec, "initContainers"), list(ts, "initContainers")
	if r, why := sameNames("init containers", oi, ti); r != "" {
		return nil, r, why
	}
	var images []ImageChange
	for i := range oi {
		a, b := oi[i].(map[string]any), ti[i].(map[string]any)
		keys := changedKeys(a, b)
		if len(keys) == 0 {
			continue
		}
		n := str(a["name"])
		switch {
		case !slices.Equal(keys, []string{"image"}):
			return nil, RefuseContainerChanged, fmt.Sprintf("init container %s changes: %s", n, strings.Join(keys, ", "))
		case !slices.Contains(graft, n) || str(a["restartPolicy"]) != "Always":
			return nil, RefuseNotNativeSidecar, fmt.Sprintf("init container %s changes image, and is not a native sidecar graft injected", n)
		}
		images = append(images, ImageChange{Container: n, From: str(a["image"]), To: str(b["image"])})
	}
	return images, "", ""
}

func templateNames(st *inject.Status) []string {
	out := make([]string, len(st.Templates))
	for i, t := range st.Templates {
		out[i] = t.Name
	}
	return out
}

// sameNames refuses when two container lists do not hold the same names
// in the same order.
func sameNames(what string, a, b []any) (Refusal, string) {
	na, nb := containerNames(a), containerNames(b)
	if !slices.Equal(na, nb) {
		return RefuseContainerChanged, fmt.Sprintf("%s [%s] become [%s]", what, strings.Join(na, ", "), strings.Join(nb, ", "))
	}
	return "", ""
}

func containerNames(l []any) []string {
	out := make([]string, len(l))
	for i, c := range l {
		if m, ok := c.(map[string]any); ok {
			out[i] = str(m["name"])
		}
	}
	return out
}

// patchFor is the patch that takes the running Pod to target's images,
// record and graft.dev/injected label.
func patchFor(running, target map[string]any, images []ImageChange) ([]byte, Refusal, string) {
	meta := object(running, "metadata")
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": meta["uid"]},
		{"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]},
	}
	inits := list(object(running, "spec"), "initContainers")
	for _, c := range images {
		i := slices.Index(containerNames(inits), c.Container)
		if i < 0 {
			return nil, RefuseRecordNotReproducible, fmt.Sprintf("the Pod has no init container %s", c.Container)
		}
		if img := str(inits[i].(map[string]any)["image"]); img != c.From {
			return nil, RefuseImageEdited, fmt.Sprintf("init container %s runs %s, not %s as graft injected it", c.Container, img, c.From)
		}
		path := fmt.Sprintf("/spec/initContainers/%d", i)
		ops = append(ops,
			map[string]any{"op": "test", "path": path + "/name", "value": c.Container},
			map[string]any{"op": "replace", "path": path + "/image", "value": c.To})
	}
	tm := object(target, "metadata")
	ops = append(ops, setKey(meta, "annotations", names.Status, object(tm, "annotations")[names.Status])...)
	if v, ok := object(tm, "labels")[names.Injected]; ok && object(meta, "labels")[names.Injected] != v {
		ops = append(ops, setKey(meta, "labels", names.Injected, v)...)
	}
	b, err := json.Marshal(ops)
	if err != nil {
		return nil, RefuseRecordNotReproducible, err.Error()
	}
	return b, "", ""
}

// setKey is the ops setting metadata.<field>[key] = v.
func setKey(meta map[string]any, field, key string, v any) []map[string]any {
	if _, ok := meta[field].(map[string]any); !ok {
		return []map[string]any{{"op": "add", "path": "/metadata/" + field, "value": map[string]any{key: v}}}
	}
	path := "/metadata/" + field + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
	return []map[string]any{{"op": "add", "path": path, "value": v}} // add replaces a member
}

func applyPatch(doc, patch []byte) ([]byte, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, fmt.Errorf("decode patch: %w", err)
	}
	out, err := p.Apply(doc)
	if err != nil {
		return nil, fmt.Errorf("apply patch: %w", err)
	}
	return out, nil
}

func decode(b []byte) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode pod: %w", err)
	}
	return m, nil
}

func mustDecode(b []byte) map[string]any {
	m, _ := decode(b) // b came from applyPatch
	return m
}

func object(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}

func list(m map[string]any, key string) []any {
	l, _ := m[key].([]any)
	return l
}

func annotations(pod map[string]any) map[string]any {
	return object(object(pod, "metadata"), "annotations")
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func union(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, b)
	return out
}

// equalMaps treats a nil map and an empty one alike.
func equalMaps(a, b map[string]any) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}

// changedKeys lists, sorted, the keys whose values differ.
func changedKeys(a, b map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(union(a, b))) {
		if !reflect.DeepEqual(a[k], b[k]) {
			out = append(out, k)
		}
	}
	return out
}
