package inject

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// An edit changes one of graft's objects in an injected Pod. allowed says
// whether the object stays graft's (docs/concepts/guarantee.md): only the
// API server's defaults, the ServiceAccount plugin's token mount, fields
// not compared, and fields set to what says nothing. apply reports false
// when the edit does not apply to the object.
type graftEdit struct {
	name    string
	allowed bool
	apply   func(r *rand.Rand, pod, obj map[string]any) bool
}

// flip sets a boolean field to the other value, an unset one to true.
func flip(m map[string]any, k string) {
	v, _ := m[k].(bool)
	m[k] = !v
}

// setNew sets m[k] to v, which it must change.
func setNew(m map[string]any, k string, v any) bool {
	if reflect.DeepEqual(m[k], v) {
		return false
	}
	m[k] = v
	return true
}

func list(m map[string]any, k string) []any {
	l, _ := m[k].([]any)
	return l
}

// probeOf returns one of c's probes, or nil.
func probeOf(r *rand.Rand, c map[string]any) map[string]any {
	var ps []map[string]any
	for _, k := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
		if p, ok := c[k].(map[string]any); ok {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	return ps[r.IntN(len(ps))]
}

var containerEdits = []graftEdit{
	// Not compared.
	{"imagePullPolicy", true, func(r *rand.Rand, _, c map[string]any) bool {
		return setNew(c, "imagePullPolicy", []string{"Always", "Never", "IfNotPresent"}[r.IntN(3)])
	}},
	{"terminationMessage", true, func(_ *rand.Rand, _, c map[string]any) bool {
		c["terminationMessagePath"], c["terminationMessagePolicy"] = "/tmp/done", "FallbackToLogsOnError"
		return true
	}},
	{"resources", true, func(r *rand.Rand, _, c map[string]any) bool {
		c["resources"] = map[string]any{"requests": map[string]any{"cpu": fmt.Sprintf("%dm", 1+r.IntN(900))}}
		return true
	}},
	{"resizePolicy", true, func(_ *rand.Rand, _, c map[string]any) bool {
		c["resizePolicy"] = []any{map[string]any{"resourceName": "cpu", "restartPolicy": "NotRequired"}}
		return true
	}},
	{"stdin and tty", true, func(_ *rand.Rand, _, c map[string]any) bool {
		c["stdin"], c["stdinOnce"], c["tty"] = true, true, true
		return true
	}},
	// What the API server and its plugins add.
	{"API server defaults", true, func(_ *rand.Rand, pod, _ map[string]any) bool {
		apiServerDefaults(pod)
		return true
	}},
	{"token mount", true, func(_ *rand.Rand, pod, c map[string]any) bool {
		if slices.ContainsFunc(list(c, "volumeMounts"), func(m any) bool { return m.(map[string]any)["mountPath"] == tokenMountPath }) {
			return false
		}
		addTokenVolume(pod, "projected")
		c["volumeMounts"] = append(list(c, "volumeMounts"), map[string]any{"name": "kube-api-access-prop", "readOnly": true, "mountPath": tokenMountPath})
		return true
	}},
	// Fields set to what says nothing.
	{"empty fields", true, func(_ *rand.Rand, _, c map[string]any) bool {
		if _, ok := c["workingDir"]; ok {
			return false
		}
		c["workingDir"] = ""
		if _, ok := c["envFrom"]; !ok {
			c["envFrom"] = []any{}
		}
		return true
	}},
	{"port protocol TCP", true, func(r *rand.Rand, _, c map[string]any) bool {
		ps := list(c, "ports")
		if len(ps) == 0 {
			return false
		}
		ps[r.IntN(len(ps))].(map[string]any)["protocol"] = "TCP"
		return true
	}},

	// Compared.
	{"image", false, func(_ *rand.Rand, _, c map[string]any) bool { c["image"] = c["image"].(string) + "-evil"; return true }},
	{"command", false, func(_ *rand.Rand, _, c map[string]any) bool {
		c["command"] = append(list(c, "command"), "--evil")
		return true
	}},
	{"args", false, func(r *rand.Rand, _, c map[string]any) bool {
		a := list(c, "args")
		if len(a) > 0 && r.IntN(2) == 0 {
			a[r.IntN(len(a))] = "--evil"
			return true
		}
		c["args"] = append(a, "--evil")
		return true
	}},
	{"workingDir", false, func(_ *rand.Rand, _, c map[string]any) bool { return setNew(c, "workingDir", "/tmp/evil") }},
	{"env added", false, func(_ *rand.Rand, _, c map[string]any) bool {
		c["env"] = append(list(c, "env"), map[string]any{"name": "HTTP_PROXY", "value": "evil:3128"})
		return true
	}},
	{"env value", false, func(r *rand.Rand, _, c map[string]any) bool {
		env := list(c, "env")
		if len(env) == 0 {
			return false
		}
		e := env[r.IntN(len(env))].(map[string]any)
		delete(e, "valueFrom")
		e["value"] = "evil"
		return true
	}},
	{"env removed", false, func(r *rand.Rand, _, c map[string]any) bool {
		env := list(c, "env")
		if len(env) == 0 {
			return false
		}
		i := r.IntN(len(env))
		c["env"] = append(env[:i:i], env[i+1:]...)
		return true
	}},
	{"envFrom", false, func(_ *rand.Rand, _, c map[string]any) bool {
		c["envFrom"] = []any{map[string]any{"secretRef": map[string]any{"name": "stolen"}}}
		return true
	}},
	{"port added", false, func(_ *rand.Rand, _, c map[string]any) bool {
		c["ports"] = append(list(c, "ports"), map[string]any{"containerPort": 9999})
		return true
	}},
	{"port protocol UDP", false, func(r *rand.Rand, _, c map[string]any) bool {
		ps := list(c, "ports")
		if len(ps) == 0 {
			return false
		}
		ps[r.IntN(len(ps))].(map[string]any)["protocol"] = "UDP"
		return true
	}},
	{"mount added", false, func(_ *rand.Rand, pod, c map[string]any) bool {
		appendTo(pod, "volumes", map[string]any{"name": "host", "hostPath": map[string]any{"path": "/"}})
		c["volumeMounts"] = append(list(c, "volumeMounts"), map[string]any{"name": "host", "mountPath": "/host"})
		return true
	}},
	{"mount readOnly", false, func(r *rand.Rand, _, c map[string]any) bool {
		ms := list(c, "volumeMounts")
		if len(ms) == 0 {
			return false
		}
		flip(ms[r.IntN(len(ms))].(map[string]any), "readOnly")
		return true
	}},
	{"token mount writable", false, func(_ *rand.Rand, pod, c map[string]any) bool {
		if slices.ContainsFunc(list(c, "volumeMounts"), func(m any) bool { return m.(map[string]any)["mountPath"] == tokenMountPath }) {
			return false
		}
		addTokenVolume(pod, "projected")
		c["volumeMounts"] = append(list(c, "volumeMounts"), map[string]any{"name": "kube-api-access-prop", "mountPath": tokenMountPath})
		return true
	}},
	{"token mount of an emptyDir", false, func(_ *rand.Rand, pod, c map[string]any) bool {
		if slices.ContainsFunc(list(c, "volumeMounts"), func(m any) bool { return m.(map[string]any)["mountPath"] == tokenMountPath }) {
			return false
		}
		addTokenVolume(pod, "emptyDir")
		c["volumeMounts"] = append(list(c, "volumeMounts"), map[string]any{"name": "kube-api-access-dir", "readOnly": true, "mountPath": tokenMountPath})
		return true
	}},
	{"volumeDevices", false, func(_ *rand.Rand, _, c map[string]any) bool {
		c["volumeDevices"] = []any{map[string]any{"name": "disk", "devicePath": "/dev/xvda"}}
		return true
	}},
	{"runAsUser 0", false, func(_ *rand.Rand, _, c map[string]any) bool { return setNew(securityContext(c), "runAsUser", 0) }},
	{"privileged", false, func(_ *rand.Rand, _, c map[string]any) bool { flip(securityContext(c), "privileged"); return true }},
	{"allowPrivilegeEscalation", false, func(_ *rand.Rand, _, c map[string]any) bool {
		sc := securityContext(c)
		if v, ok := sc["allowPrivilegeEscalation"].(bool); !ok || v {
			return false // unset means true: only false can be changed
		}
		sc["allowPrivilegeEscalation"] = true
		return true
	}},
	{"capabilities added", false, func(_ *rand.Rand, _, c map[string]any) bool {
		caps, _ := securityContext(c)["capabilities"].(map[string]any)
		if caps == nil {
			caps = map[string]any{}
			securityContext(c)["capabilities"] = caps
		}
		caps["add"] = append(list(caps, "add"), "SYS_ADMIN")
		return true
	}},
	{"seccomp unconfined", false, func(_ *rand.Rand, _, c map[string]any) bool {
		return setNew(securityContext(c), "seccompProfile", map[string]any{"type": "Unconfined"})
	}},
	{"no securityContext", false, func(_ *rand.Rand, _, c map[string]any) bool {
		if c["securityContext"] == nil {
			return false
		}
		delete(c, "securityContext")
		return true
	}},
	{"probe removed", false, func(_ *rand.Rand, _, c map[string]any) bool {
		for _, k := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
			if _, ok := c[k]; ok {
				delete(c, k)
				return true
			}
		}
		return false
	}},
	{"probe timing", false, func(r *rand.Rand, _, c map[string]any) bool {
		p := probeOf(r, c)
		if p == nil {
			return false
		}
		// 7 is no default: a defaulted field set to another value.
		return setNew(p, []string{"timeoutSeconds", "periodSeconds", "failureThreshold"}[r.IntN(3)], 7)
	}},
	{"livenessProbe added", false, func(_ *rand.Rand, _, c map[string]any) bool {
		if _, ok := c["livenessProbe"]; ok {
			return false
		}
		c["livenessProbe"] = map[string]any{"exec": map[string]any{"command": []any{"true"}}}
		return true
	}},
	{"lifecycle", false, func(_ *rand.Rand, _, c map[string]any) bool {
		c["lifecycle"] = map[string]any{"preStop": map[string]any{"exec": map[string]any{"command": []any{"/bin/sh", "-c", "evil"}}}}
		return true
	}},
	{"a field graft never sets", false, func(_ *rand.Rand, _, c map[string]any) bool {
		c["restartPolicyRules"] = []any{map[string]any{"action": "Restart", "exitCodes": map[string]any{"operator": "In", "values": []any{42}}}}
		return true
	}},
}

var volumeEdits = []graftEdit{
	{"emptyDir medium", false, func(_ *rand.Rand, _, v map[string]any) bool {
		d, ok := v["emptyDir"].(map[string]any)
		if !ok || d["medium"] == "HugePages" {
			return false
		}
		d["medium"] = "HugePages"
		return true
	}},
	{"hostPath", false, func(_ *rand.Rand, _, v map[string]any) bool {
		for k := range v {
			if k != "name" {
				delete(v, k)
			}
		}
		v["hostPath"] = map[string]any{"path": "/var/log"}
		return true
	}},
	{"API server defaults", true, func(_ *rand.Rand, pod, _ map[string]any) bool {
		apiServerDefaults(pod)
		return true
	}},
}

// addTokenVolume gives pod a volume named like the ServiceAccount
// plugin's, of kind: kube-api-access-prop (projected) or -dir.
func addTokenVolume(pod map[string]any, kind string) {
	name, src := "kube-api-access-prop", map[string]any{"sources": []any{}}
	if kind != "projected" {
		name, src = "kube-api-access-dir", map[string]any{}
	}
	if findNamed(pod["spec"].(map[string]any)["volumes"], name) == nil {
		appendTo(pod, "volumes", map[string]any{"name": name, kind: src})
	}
}

// TestGraftsExactlyWhenAllowed: for random Pods graft injected and random
// edits of graft's containers, init containers and volumes, graft takes
// the object for its own (no conflict, the object left as it is) exactly
// when the edit is an allowed difference, under onConflict: deny and
// keep (which then records the object kept), with or without the Pod's
// record.
func TestGraftsExactlyWhenAllowed(t *testing.T) {
	const seed, n = 20261128, 1500
	cfg := guaranteeConfig()
	profiles := []string{"enabled", "agent", "otel-agent", "secrets-agent", "log-shipper", "mesh-proxy-secrets-agent", "otel-agent-log-shipper"}
	for _, p := range profiles {
		keep := cfg.Profiles[p]
		keep.OnConflict = ConflictKeep
		cfg.Profiles[p+"-keep"] = keep
	}
	e := newTestEngine(t, cfg)
	r := rand.New(rand.NewPCG(seed, 3))
	seen := map[string]int{}
	for i := range n {
		pod := genPod(r)
		uniqueNames(pod)
		strictenPod(r, pod)
		profile := profiles[r.IntN(len(profiles))]
		first := admitAs(t, e, profile, "admission.k8s.io/v1", pod)
		if first.res.Decision != DecisionInject {
			continue // a Pod graft does not inject: nothing of graft's to edit
		}
		injected := first.pod
		if r.IntN(2) == 0 {
			apiServerDefaults(injected)
		}
		pl := e.impl.profiles[profile].def.plan
		var targets []*element
		for _, l := range [][]element{pl.inits, pl.sidecars, pl.volumes} {
			for j := range l {
				targets = append(targets, &l[j])
			}
		}
		el := targets[r.IntN(len(targets))]
		edits, isVolume := containerEdits, el.kind == kVolumes
		if isVolume {
			edits = volumeEdits
		}
		edited := clone(t, injected)
		obj := named(edited, el.name)
		if isVolume {
			obj = findNamed(edited["spec"].(map[string]any)["volumes"], el.name)
		}
		ed := edits[r.IntN(len(edits))]
		if !ed.apply(r, edited, obj) {
			continue
		}
		if r.IntN(3) == 0 {
			delete(annotations(edited), "graft.dev/status")
		}
		seen[ed.name]++
		want := clone(t, obj)
		t.Run(fmt.Sprintf("%d/%s/%s/%s", i, profile, el.name, ed.name), func(t *testing.T) {
			deny := admitAs(t, e, profile, "admission.k8s.io/v1", clone(t, edited))
			keep := admitAs(t, e, profile+"-keep", "admission.k8s.io/v1", clone(t, edited))
			object := `container "` + el.name + `"`
			if isVolume {
				object = `volume "` + el.name + `"`
			}
			notGraft := deny.res.Decision == DecisionDeny && deny.res.Reason == ReasonConflict && strings.Contains(deny.message, object)
			if notGraft == ed.allowed {
				t.Fatalf("edit %q (allowed: %v) of %s: %v/%v %s", ed.name, ed.allowed, el.name, deny.res.Decision, deny.res.Reason, deny.message)
			}
			kept := slices.ContainsFunc(podStatus(t, keep.pod).Kept, func(k KeptStatus) bool {
				return slices.Contains(k.InitContainers, el.name) || slices.Contains(k.Containers, el.name) || slices.Contains(k.Volumes, el.name)
			})
			if kept == ed.allowed {
				t.Fatalf("keep: edit %q (allowed: %v) of %s: kept %v: %s", ed.name, ed.allowed, el.name, kept, podStatus(t, keep.pod).Value())
			}
			if !ed.allowed {
				return
			}
			// graft's: left as it is, recorded, and a second call
			// converges.
			after := named(deny.pod, el.name)
			if isVolume {
				after = findNamed(deny.pod["spec"].(map[string]any)["volumes"], el.name)
			}
			if !reflect.DeepEqual(after, want) {
				t.Fatalf("graft changed its own %s:\n%s\nwant\n%s", el.name, mustJSON(t, after), mustJSON(t, want))
			}
			if st := podStatus(t, deny.pod); !slices.Contains(st.Injected, el.name) && !isVolume {
				t.Fatalf("status %s does not record %s", st.Value(), el.name)
			}
			if again := admitAs(t, e, profile, "admission.k8s.io/v1", deny.pod); again.res.Decision != DecisionSkip {
				t.Fatalf("second call: %v/%v %s", again.res.Decision, again.res.Reason, again.message)
			}
		})
	}
	// Every edit ran: the property covers each field and difference.
	for _, l := range [][]graftEdit{containerEdits, volumeEdits} {
		for _, ed := range l {
			if seen[ed.name] == 0 {
				t.Errorf("edit %q never applied", ed.name)
			}
		}
	}
	if testing.Verbose() {
		b, _ := json.Marshal(seen)
		t.Logf("edits applied: %s", b)
	}
}
