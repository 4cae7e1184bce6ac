package inject

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/internal/names"
)

// genPod builds a random Pod as generic JSON: lists and maps absent, null,
// empty or full; user elements that collide with graft's names; fields no
// Kubernetes version knows; quantities spelled oddly; awkward keys.
func genPod(r *rand.Rand) map[string]any {
	pick := func(n int) bool { return r.IntN(n) == 0 }
	list := func(gen func(int) any, max int) any {
		switch r.IntN(5) {
		case 0:
			return nil
		case 1:
			return []any{}
		}
		n := 1 + r.IntN(max)
		out := make([]any, n)
		for i := range out {
			out[i] = gen(i)
		}
		return out
	}
	env := func(i int) any {
		if pick(12) {
			return map[string]any{"name": "GRAFT_AGENT_ADDR", "value": "user-set"}
		}
		e := map[string]any{"name": fmt.Sprintf("E%d_%d", i, r.IntN(1000)), "value": "v"}
		if pick(4) {
			e = map[string]any{"name": fmt.Sprintf("F%d_%d", i, r.IntN(1000)), "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}}
		}
		if pick(8) {
			e["x-future"] = []any{1.5, "two"}
		}
		return e
	}
	mount := func(i int) any {
		if pick(10) {
			return map[string]any{"name": fmt.Sprintf("own-%d", i), "mountPath": "/var/run/graft-agent"}
		}
		return map[string]any{"name": fmt.Sprintf("m%d", i), "mountPath": fmt.Sprintf("/data/%d", i)}
	}
	container := func(i int) any {
		c := map[string]any{"name": fmt.Sprintf("app-%d", i), "image": "registry.local/app:1"}
		if pick(15) {
			c["name"] = "graft-agent"
		}
		if v := list(env, 6); v != nil || pick(2) {
			c["env"] = v
		}
		if v := list(mount, 3); v != nil || pick(2) {
			c["volumeMounts"] = v
		}
		if pick(3) {
			req := map[string]any{"cpu": "0.25", "memory": "1e3"}
			if pick(2) {
				req["ephemeral-storage"] = "512Mi"
			}
			c["resources"] = map[string]any{"requests": req}
		}
		if pick(5) {
			c["x-future-container"] = map[string]any{"deep": map[string]any{"deeper": true}}
		}
		return c
	}
	initc := func(i int) any {
		c := map[string]any{"name": fmt.Sprintf("init-%d", i), "image": "registry.local/init:1"}
		if pick(3) {
			c["restartPolicy"] = "Always"
		}
		return c
	}
	volume := func(i int) any {
		if pick(10) {
			return map[string]any{"name": "graft-agent-run", "emptyDir": map[string]any{}}
		}
		return map[string]any{"name": fmt.Sprintf("v%d", i), "emptyDir": map[string]any{}}
	}
	strMap := func() any {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return map[string]any{}
		}
		m := map[string]any{"a~b/c": "tilde", "example.com/x": "y"}
		if pick(4) {
			m["graft.dev/status"] = "stale"
		}
		return m
	}
	spec := map[string]any{"containers": list(container, 5)}
	if spec["containers"] == nil || len(spec["containers"].([]any)) == 0 {
		spec["containers"] = []any{container(0)}
	}
	for _, k := range []string{"initContainers", "volumes"} {
		gen := initc
		if k == "volumes" {
			gen = volume
		}
		if v := list(gen, 4); v != nil || pick(2) {
			spec[k] = v
		}
	}
	if pick(4) {
		spec["x-future-spec"] = "keep"
	}
	meta := map[string]any{"namespace": "shop"}
	if pick(2) {
		meta["name"] = fmt.Sprintf("pod-%d", r.IntN(1000))
	} else {
		meta["generateName"] = "pod-"
	}
	for _, k := range []string{"annotations", "labels"} {
		if v := strMap(); v != nil || pick(2) {
			meta[k] = v
		}
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
}

// uniqueNames dedupes what Kubernetes requires to be unique: container
// names, volume names, and env names and mounts within a container.
func uniqueNames(pod map[string]any) {
	seen := map[string]bool{}
	spec := pod["spec"].(map[string]any)
	for _, k := range []string{"initContainers", "containers"} {
		l, _ := spec[k].([]any)
		for i, c := range l {
			m := c.(map[string]any)
			for key, fields := range map[string][]string{"env": {"name"}, "volumeMounts": {"name", "mountPath"}} {
				if items, ok := m[key].([]any); ok {
					seenField := map[string]bool{}
					m[key] = slices.DeleteFunc(items, func(e any) bool {
						dup := false
						for _, f := range fields {
							v := f + "=" + e.(map[string]any)[f].(string)
							dup = dup || seenField[v]
							seenField[v] = true
						}
						return dup
					})
				}
			}
			name := m["name"].(string)
			if seen[name] {
				m["name"] = fmt.Sprintf("%s-%s-%d", name, k, i)
			}
			seen[m["name"].(string)] = true
		}
	}
	if vols, ok := spec["volumes"].([]any); ok {
		seenV := map[string]bool{}
		spec["volumes"] = slices.DeleteFunc(vols, func(v any) bool {
			n := v.(map[string]any)["name"].(string)
			dup := seenV[n]
			seenV[n] = true
			return dup
		})
	}
}

func podReview(pod any, uid string) []byte {
	return corpus.Marshal("admission.k8s.io/v1", uid, "CREATE", "shop", pod)
}

// foreignMutators are the edits another webhook might make between two
// calls to graft (reinvocationPolicy: IfNeeded). check asserts the edit
// survived graft's second call.
var foreignMutators = []struct {
	name   string
	mutate func(pod map[string]any)
	// check gets graft's second answer; keep is the profile's onConflict.
	check func(t *testing.T, pod map[string]any, res Result, keep bool)
}{
	{"append-container", func(pod map[string]any) {
		spec := pod["spec"].(map[string]any)
		spec["containers"] = append(spec["containers"].([]any), map[string]any{"name": "foreign", "image": "other:1"})
	}, func(t *testing.T, pod map[string]any, _ Result, _ bool) {
		c := findNamed(pod["spec"].(map[string]any)["containers"], "foreign")
		if c == nil {
			t.Fatal("foreign container lost")
		}
		st, err := ParseStatus(pod["metadata"].(map[string]any)["annotations"].(map[string]any)[names.Status].(string))
		if err != nil {
			t.Fatal(err)
		}
		if agent := st.Template("agent"); agent == nil {
			return // left out for a conflict
		} else if findNamed(c["env"], "GRAFT_AGENT_ADDR") == nil || !slices.Contains(agent.AppContainers["foreign"].Env, "GRAFT_AGENT_ADDR") {
			t.Fatalf("foreign container did not get graft's env var, or the status does not record it: %+v", agent)
		}
	}},
	// imagePullPolicy is not compared: graft's containers stay graft's.
	{"pull-policy", func(pod map[string]any) {
		eachContainer(pod, func(_ string, c map[string]any) { c["imagePullPolicy"] = "Always" })
	}, func(t *testing.T, pod map[string]any, res Result, _ bool) {
		eachContainer(pod, func(_ string, c map[string]any) {
			if c["imagePullPolicy"] != "Always" {
				t.Fatalf("foreign edit undone on %v", c["name"])
			}
		})
		if res.Decision == DecisionDeny {
			t.Fatalf("a pull policy made graft deny: %v", res.Reason)
		}
	}},
	// An env var on every container, graft's included: graft's are then
	// not graft's render, a conflict (docs/concepts/guarantee.md: such a
	// webhook must leave graft's containers out).
	{"env-on-every-container", func(pod map[string]any) {
		eachContainer(pod, func(_ string, c map[string]any) {
			env, _ := c["env"].([]any)
			c["env"] = append(env, map[string]any{"name": "FOREIGN", "value": "1"})
		})
	}, func(t *testing.T, pod map[string]any, res Result, keep bool) {
		if podHas(pod, "graft-agent") && injectedAgent(pod) {
			if !keep && (res.Decision != DecisionDeny || res.Reason != ReasonConflict) {
				t.Fatalf("graft's sidecar edited by another webhook: %v/%v, want deny/conflict", res.Decision, res.Reason)
			}
			return
		}
		eachContainer(pod, func(_ string, c map[string]any) {
			if findNamed(c["env"], "FOREIGN") == nil {
				t.Fatalf("foreign edit undone on %v", c["name"])
			}
		})
		if keep && podHas(pod, "graft-agent") {
			st := podStatus(t, pod)
			if st.Template("agent") != nil || len(st.Kept) == 0 || res.Warnings == 0 {
				t.Fatalf("keep, graft's sidecar edited by another webhook: status %s, %d warnings; want agent kept, a warning", st.Value(), res.Warnings)
			}
		}
	}},
	{"annotations-labels", func(pod map[string]any) {
		meta := pod["metadata"].(map[string]any)
		for _, k := range []string{"annotations", "labels"} {
			m, _ := meta[k].(map[string]any)
			if m == nil {
				m = map[string]any{}
			}
			m["foreign.example.com/"+k] = "set"
			meta[k] = m
		}
	}, func(t *testing.T, pod map[string]any, _ Result, _ bool) {
		meta := pod["metadata"].(map[string]any)
		for _, k := range []string{"annotations", "labels"} {
			if meta[k].(map[string]any)["foreign.example.com/"+k] != "set" {
				t.Fatalf("foreign %s lost", k)
			}
		}
	}},
	{"reorder-containers", func(pod map[string]any) {
		slices.Reverse(pod["spec"].(map[string]any)["containers"].([]any))
	}, func(t *testing.T, pod map[string]any, _ Result, _ bool) {}},
	// Without its status graft still tells its containers by what they
	// hold: they stay, and the status is written again.
	{"remove-status", func(pod map[string]any) {
		delete(pod["metadata"].(map[string]any)["annotations"].(map[string]any), names.Status)
	}, func(t *testing.T, pod map[string]any, res Result, keep bool) {
		if res.Decision == DecisionDeny {
			t.Fatalf("graft's own containers without a status: %v/%v, want them graft's", res.Decision, res.Reason)
		}
		if podHas(pod, "graft-agent") && injectedAgent(pod) && podStatus(t, pod).Template("agent") == nil {
			t.Fatalf("graft's sidecar without a status: the status written again does not record it: %s", podStatus(t, pod).Value())
		}
	}},
	// A webhook built on an older k8s.io/api drops restartPolicy from
	// every init container: graft restores it on its own sidecars only.
	{"strip-restart-policy", func(pod map[string]any) {
		eachInit(pod, func(c map[string]any) { delete(c, "restartPolicy") })
	}, func(t *testing.T, pod map[string]any, _ Result, _ bool) {
		eachInit(pod, func(c map[string]any) {
			if own := c["name"] == "graft-agent"; (c["restartPolicy"] == "Always") != own {
				t.Fatalf("init container %v: restartPolicy %v after graft's repair", c["name"], c["restartPolicy"])
			}
		})
	}},
	// Another webhook reverses the init containers: graft's "first"
	// sidecar goes back to the front, the others keep the new order.
	{"reorder-init-containers", func(pod map[string]any) {
		if l, ok := pod["spec"].(map[string]any)["initContainers"].([]any); ok {
			slices.Reverse(l)
		}
	}, func(t *testing.T, pod map[string]any, _ Result, _ bool) {
		var names []any
		eachInit(pod, func(c map[string]any) { names = append(names, c["name"]) })
		if i := slices.Index(names, any("graft-agent")); i > 0 {
			t.Fatalf("graft's first sidecar at index %d after graft's repair: %v", i, names)
		}
	}},
}

// injectedAgent reports whether pod holds graft's agent sidecar as graft
// renders it: its image (the Pods generated name their own graft-agent
// after the app's image).
func injectedAgent(pod map[string]any) bool {
	c := findNamed(pod["spec"].(map[string]any)["initContainers"], "graft-agent")
	return c != nil && c["image"] != "registry.local/app:1"
}

// podStatus reads pod's graft.dev/status.
func podStatus(t *testing.T, pod map[string]any) *Status {
	t.Helper()
	ann, _ := pod["metadata"].(map[string]any)["annotations"].(map[string]any)
	v, _ := ann[names.Status].(string)
	st, err := ParseStatus(v)
	if err != nil {
		t.Fatalf("status %q: %v", v, err)
	}
	return &st
}

// eachInit calls fn with each init container of pod.
func eachInit(pod map[string]any, fn func(c map[string]any)) {
	l, _ := pod["spec"].(map[string]any)["initContainers"].([]any)
	for _, c := range l {
		fn(c.(map[string]any))
	}
}

// podHas reports whether pod has a container or init container called name.
func podHas(pod map[string]any, name string) bool {
	spec := pod["spec"].(map[string]any)
	return findNamed(spec["containers"], name) != nil || findNamed(spec["initContainers"], name) != nil
}

// planInjects reports whether pl injects a container called name.
func planInjects(pl *plan, name string) bool {
	return slices.ContainsFunc(append(slices.Clone(pl.inits), pl.sidecars...), func(el element) bool { return el.name == name })
}

func findNamed(list any, name string) map[string]any {
	l, _ := list.([]any)
	for _, e := range l {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}

// assertNoDuplicates checks every named list of the Pod.
func assertNoDuplicates(t *testing.T, pod map[string]any) {
	t.Helper()
	spec := pod["spec"].(map[string]any)
	dup := func(where string, list any, key string) {
		seen := map[any]bool{}
		l, _ := list.([]any)
		for _, e := range l {
			v := e.(map[string]any)[key]
			if seen[v] {
				t.Fatalf("duplicate %s %v in %s", key, v, where)
			}
			seen[v] = true
		}
	}
	var all []any
	for _, k := range []string{"initContainers", "containers"} {
		l, _ := spec[k].([]any)
		all = append(all, l...)
		for _, c := range l {
			m := c.(map[string]any)
			dup(fmt.Sprint(m["name"], ".env"), m["env"], "name")
			dup(fmt.Sprint(m["name"], ".volumeMounts"), m["volumeMounts"], "name")
			dup(fmt.Sprint(m["name"], ".volumeMounts"), m["volumeMounts"], "mountPath")
		}
	}
	dup("containers", all, "name")
	dup("volumes", spec["volumes"], "name")
}

func decodeGeneric(t testing.TB, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// stripGraft removes from patched what graft added to orig, so the rest can
// be compared with orig exactly: nothing else may have changed.
func stripGraft(pl *plan, orig, patched map[string]any) {
	own := map[string]bool{}
	for _, l := range [][]element{pl.inits, pl.sidecars, pl.volumes, pl.appEnv, pl.appMount} {
		for _, e := range l {
			own[e.name] = true
		}
	}
	stripList := func(o, p map[string]any, key string) {
		ol, had := o[key]
		pl, _ := p[key].([]any)
		if pl == nil {
			return
		}
		oldNames := map[any]bool{}
		if l, ok := ol.([]any); ok {
			for _, e := range l {
				oldNames[e.(map[string]any)["name"]] = true
			}
		}
		kept := slices.DeleteFunc(slices.Clone(pl), func(e any) bool {
			n := e.(map[string]any)["name"]
			s, _ := n.(string)
			return own[s] && !oldNames[n]
		})
		switch {
		case !had && len(kept) == 0:
			delete(p, key)
		case had && ol == nil && len(kept) == 0:
			p[key] = nil
		default:
			p[key] = kept
		}
	}
	ps, os := patched["spec"].(map[string]any), orig["spec"].(map[string]any)
	for _, k := range []string{"initContainers", "containers", "volumes"} {
		stripList(os, ps, k)
	}
	// graft adds its containers' figures to the pod-level resources
	// (checked by checkStaysValid and against the reference).
	if res, ok := os["resources"]; ok {
		ps["resources"] = res
	}
	oc, _ := os["containers"].([]any)
	pcs, _ := ps["containers"].([]any)
	for i := range pcs {
		if i < len(oc) {
			for _, k := range []string{"env", "volumeMounts"} {
				stripList(oc[i].(map[string]any), pcs[i].(map[string]any), k)
			}
		}
	}
	om, pm := orig["metadata"].(map[string]any), patched["metadata"].(map[string]any)
	stripKey := func(mapKey, key string) {
		o, had := om[mapKey]
		p, _ := pm[mapKey].(map[string]any)
		if p == nil {
			return
		}
		om, _ := o.(map[string]any)
		if v, ok := om[key]; ok {
			p[key] = v
		} else {
			delete(p, key)
		}
		switch {
		case !had && len(p) == 0:
			delete(pm, mapKey)
		case had && o == nil && len(p) == 0:
			pm[mapKey] = nil
		}
	}
	stripKey("annotations", names.Status)
	stripKey("labels", names.Injected)
}

func TestProperties(t *testing.T) {
	const seed, n = 20261121, 1000
	e := newTestEngine(t, goldenConfig())
	pl := e.impl.profiles["agent"].def.plan
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range n {
		pod := genPod(r)
		uniqueNames(pod)
		strictenPod(r, pod)
		// Two in three Pods come as the API server's in-tree plugins
		// leave them in a namespace with a ServiceAccount and maybe a
		// LimitRange; the rest as a bare API server would.
		var cluster *clusterModel
		if r.IntN(3) != 0 {
			m := genCluster(r)
			prepareForCluster(r, pod)
			m.admitInTree(pod, "first")
			cluster = &m
		}
		addPodLevelResources(r, pod)
		otherOS := targetsOtherOS(pod)
		// Half the Pods are served by a profile that denies conflicts,
		// half by one that keeps the Pod's own objects.
		keep := r.IntN(2) == 0
		o := Options{Profile: "agent"}
		if keep {
			o.Profile = "keep"
		}
		review := podReview(pod, fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			resp, res, err := e.Admit(nil, review, o)
			if err != nil {
				t.Fatalf("admit: %v\n%s", err, review)
			}
			if again, _, _ := e.Admit(nil, review, o); !bytes.Equal(resp, again) {
				t.Fatal("non-deterministic response")
			}

			if otherOS {
				if res.Decision != DecisionSkip || res.Reason != ReasonOS || responsePatch(t, resp) != nil {
					t.Fatalf("a Pod for Windows: %v/%v, want skipped for os\n%s", res.Decision, res.Reason, resp)
				}
				return
			}
			// Same answer as the typed reference path, which knows nothing
			// of the in-tree plugins: in a cluster, the same Pod once the
			// API server has defaulted it and re-run its plugins.
			refJSON, denied := referenceInject(t, pl, reviewObject(t, review), keep)
			if denied {
				if res.Decision != DecisionDeny || res.Reason != ReasonConflict || responsePatch(t, resp) != nil {
					t.Fatalf("the Pod holds an object named like graft's: %v/%v, want deny/conflict\n%s", res.Decision, res.Reason, resp)
				}
				return
			}
			patched := applyResponse(t, review, resp)
			var fast corev1.Pod
			if err := json.Unmarshal(patched, &fast); err != nil {
				t.Fatalf("patched object is not a Pod: %v", err)
			}
			checkStaysValid(t, reviewObject(t, review), patched)
			if cluster == nil {
				var ref corev1.Pod
				if err := json.Unmarshal(refJSON, &ref); err != nil {
					t.Fatal(err)
				}
				assertSamePod(t, "fast path and reference", fast, ref)
			} else {
				checkInTreeRerun(t, e, o, pl, *cluster, reviewObject(t, review), patched, refJSON)
			}

			// Nothing but graft's additions changed, byte-for-byte in meaning.
			orig := decodeGeneric(t, reviewObject(t, review))
			got := decodeGeneric(t, patched)
			stripGraft(pl, orig, got)
			if !reflect.DeepEqual(orig, got) {
				ob, _ := json.Marshal(orig)
				gb, _ := json.Marshal(got)
				t.Fatalf("graft changed more than it added:\norig %s\ngot  %s", ob, gb)
			}

			// Idempotent.
			second := podReview(json.RawMessage(patched), "second")
			if resp2, _, _ := e.Admit(nil, second, o); responsePatch(t, resp2) != nil {
				t.Fatalf("second admission patched again: %s", resp2)
			}

			checkUninject(t, reviewObject(t, review), patched)
			checkUpgrades(t, e, o, reviewObject(t, review), patched)

			// Reinvocation after each foreign mutator never duplicates,
			// never undoes the foreign edit, and converges.
			for _, m := range foreignMutators {
				pod := decodeGeneric(t, patched)
				m.mutate(pod)
				mutated, _ := json.Marshal(pod)
				rv := podReview(json.RawMessage(mutated), "reinvoke")
				resp, res, err := e.Admit(nil, rv, o)
				if err != nil {
					t.Fatal(err)
				}
				after := decodeGeneric(t, applyResponse(t, rv, resp))
				assertNoDuplicates(t, after)
				m.check(t, after, res, keep)
				final, _ := json.Marshal(after)
				rv3 := podReview(json.RawMessage(final), "third")
				if resp3 := mustAdmit(t, e, rv3, o); responsePatch(t, resp3) != nil {
					t.Fatalf("%s: third call still patches: %s", m.name, responsePatch(t, resp3))
				}
			}
		})
	}
}

func assertSamePod(t *testing.T, what string, a, b corev1.Pod) {
	t.Helper()
	if !equality.Semantic.DeepEqual(a, b) {
		ab, _ := json.Marshal(a)
		bb, _ := json.Marshal(b)
		t.Fatalf("%s differ:\n%s\n%s", what, ab, bb)
	}
}

// checkInTreeRerun holds graft's answer against the in-tree plugins' re-run
// (clusterModel): the Pod the API server ends with is the one it would end
// with had graft not mirrored them (so graft never adds what they would
// not), graft's answer is their fixed point whenever the first run showed
// graft all it needed, and graft has nothing to add to the final Pod.
func checkInTreeRerun(t *testing.T, e *Engine, o Options, pl *plan, m clusterModel, orig, patched, ref []byte) {
	t.Helper()
	settle := func(obj []byte) (corev1.Pod, []byte, bool) {
		g := decodeGeneric(t, obj)
		defaultRequests(g)
		changed := m.admitInTree(g, "rerun")
		b, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		var p corev1.Pod
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("settled Pod: %v", err)
		}
		return p, b, changed
	}
	fast, final, changed := settle(patched)
	want, _, _ := settle(ref)
	// One difference is by design: where graft gave its containers the
	// LimitRange defaults, the re-run sets nothing and so leaves
	// LimitRanger's record of its first run; without graft's help it would
	// rewrite the record to name graft's containers.
	delete(fast.Annotations, names.LimitRangerAnnotation)
	delete(want.Annotations, names.LimitRangerAnnotation)
	if m.handMountedEverywhere(decodeGeneric(t, orig)) {
		// The documented exception: graft mounts the Pod's own volume.
		var before corev1.Pod
		if err := json.Unmarshal(orig, &before); err != nil {
			t.Fatal(err)
		}
		dropTokenMounts(&fast, func(name string) bool {
			return planInjects(pl, name) && !slices.ContainsFunc(append(before.Spec.InitContainers, before.Spec.Containers...),
				func(c corev1.Container) bool { return c.Name == name })
		})
	}
	assertSamePod(t, "after the in-tree re-run, graft's Pod and the reference", fast, want)
	if changed && m.knowable(decodeGeneric(t, orig)) {
		t.Fatalf("the in-tree re-run changed graft's answer, though the first run showed all it needed:\n%s", final)
	}
	rv := podReview(json.RawMessage(final), "settled")
	if resp := mustAdmit(t, e, rv, o); responsePatch(t, resp) != nil {
		t.Fatalf("graft patches the settled Pod: %s", responsePatch(t, resp))
	}
}
