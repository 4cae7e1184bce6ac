package inject

import (
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/internal/names"
)

// clusterModel is this test's own reading of what kube-apiserver's in-tree
// mutating plugins do to a Pod CREATE, on their first run and on the
// re-run after webhooks (k8s.io/kubernetes plugin/pkg/admission:
// limitranger/admission.go mergePodResourceRequirements,
// serviceaccount/admission.go Admit and mountServiceAccountToken), and of
// the defaulting the API server applies to a webhook's patch
// (pkg/apis/core/v1/defaults.go SetDefaults_Pod). It works on generic
// JSON so that fields no Kubernetes version knows survive. The e2e suite
// checks the same against the real API server.
type clusterModel struct {
	// saAutomount is the ServiceAccount's automountServiceAccountToken.
	saAutomount bool
	// requests and limits are the LimitRange's container defaults; as the
	// API server defaults a LimitRange, every limit has a request.
	requests, limits map[string]string
}

// genCluster picks a namespace's ServiceAccount and LimitRange.
func genCluster(r *rand.Rand) clusterModel {
	m := clusterModel{saAutomount: r.IntN(3) != 0, requests: map[string]string{}, limits: map[string]string{}}
	if r.IntN(2) == 0 {
		switch r.IntN(3) {
		case 0:
			m.requests["ephemeral-storage"], m.limits["ephemeral-storage"] = "1Gi", "2Gi"
		case 1:
			m.requests["ephemeral-storage"] = "1Gi"
		default: // a default limit alone: the request defaults to it
			m.requests["ephemeral-storage"], m.limits["ephemeral-storage"] = "2Gi", "2Gi"
		}
		if r.IntN(2) == 0 {
			m.requests["cpu"], m.limits["cpu"] = "100m", "500m"
		}
	}
	return m
}

// prepareForCluster gives a generated Pod what users write that matters
// to the plugins: the automount field, a volume of their own whose name
// looks like the plugin's, containers that mount their own token (one, or
// all of them as in a copy of a running Pod's manifest).
func prepareForCluster(r *rand.Rand, pod map[string]any) {
	spec := pod["spec"].(map[string]any)
	switch r.IntN(4) {
	case 0:
		spec["automountServiceAccountToken"] = false
	case 1:
		spec["automountServiceAccountToken"] = true
	}
	// A volume named like the plugin's is projected, as in a copy of a
	// running Pod's manifest: graft's containers may hold the plugin's
	// mount of no other kind (own.go; TestTokenMountOfAnotherKind).
	projected := func(name string) any {
		return map[string]any{"name": name, "projected": map[string]any{"defaultMode": 420,
			"sources": []any{map[string]any{"serviceAccountToken": map[string]any{"path": "token"}}}}}
	}
	vols, _ := spec["volumes"].([]any)
	if r.IntN(4) == 0 {
		vols = append([]any{projected("kube-api-access-user")}, vols...)
	}
	if r.IntN(3) == 0 {
		name := "own-token"
		vol := map[string]any{"name": name, "emptyDir": map[string]any{}}
		if r.IntN(2) == 0 {
			name = "kube-api-access-manual"
			vol = projected(name).(map[string]any)
		}
		vols = append(vols, vol)
		mount := func(c map[string]any) {
			mounts, _ := c["volumeMounts"].([]any)
			c["volumeMounts"] = append(mounts, map[string]any{"name": name, "mountPath": tokenMountPath})
		}
		if r.IntN(2) == 0 {
			mount(spec["containers"].([]any)[0].(map[string]any))
		} else {
			eachContainer(pod, func(_ string, c map[string]any) { mount(c) })
		}
	}
	if vols != nil {
		spec["volumes"] = vols
	}
}

// eachContainer calls fn for every container, then every init container,
// with the name LimitRanger's record uses for its kind.
func eachContainer(pod map[string]any, fn func(kind string, c map[string]any)) {
	spec := pod["spec"].(map[string]any)
	for _, k := range []struct{ key, kind string }{{"containers", "container"}, {"initContainers", "init container"}} {
		l, _ := spec[k.key].([]any)
		for _, c := range l {
			fn(k.kind, c.(map[string]any))
		}
	}
}

// admitInTree runs LimitRanger, then ServiceAccount, on pod and reports
// whether they changed it. tokenSuffix names a volume the plugin creates.
func (m clusterModel) admitInTree(pod map[string]any, tokenSuffix string) bool {
	lr := m.limitRanger(pod)
	sa := m.serviceAccount(pod, tokenSuffix)
	return lr || sa
}

func (m clusterModel) limitRanger(pod map[string]any) bool {
	var record []string
	eachContainer(pod, func(kind string, c map[string]any) {
		res, _ := c["resources"].(map[string]any)
		if res == nil {
			res = map[string]any{}
		}
		set := func(key string, defaults map[string]string) []string {
			have, _ := res[key].(map[string]any)
			if have == nil {
				have = map[string]any{}
			}
			var names []string
			for _, r := range sortedKeys(defaults) {
				if _, ok := have[r]; !ok {
					have[r] = defaults[r]
					names = append(names, r)
				}
			}
			if len(have) > 0 {
				res[key] = have
			}
			return names
		}
		lim := set("limits", m.limits)
		req := set("requests", m.requests)
		if len(res) > 0 {
			c["resources"] = res
		}
		if len(req) > 0 {
			record = append(record, strings.Join(req, ", ")+" request for "+kind+" "+c["name"].(string))
		}
		if len(lim) > 0 {
			record = append(record, strings.Join(lim, ", ")+" limit for "+kind+" "+c["name"].(string))
		}
	})
	if len(record) == 0 {
		return false
	}
	meta := pod["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	ann[names.LimitRangerAnnotation] = limitRangerPrefix + strings.Join(record, "; ")
	return true
}

func (m clusterModel) serviceAccount(pod map[string]any, tokenSuffix string) bool {
	spec := pod["spec"].(map[string]any)
	changed := false
	if spec["serviceAccountName"] == nil {
		spec["serviceAccountName"], changed = "default", true
	}
	if !m.automounts(pod) {
		return changed
	}
	vols, _ := spec["volumes"].([]any)
	vol := ""
	for _, v := range vols {
		if n := v.(map[string]any)["name"].(string); strings.HasPrefix(n, tokenVolumePrefix) {
			vol = n
			break
		}
	}
	hasVol := vol != ""
	if !hasVol {
		vol = tokenVolumePrefix + tokenSuffix
	}
	needed := false
	for _, key := range []string{"initContainers", "containers"} {
		l, _ := spec[key].([]any)
		for _, c := range l {
			cm := c.(map[string]any)
			mounts, _ := cm["volumeMounts"].([]any)
			if slices.ContainsFunc(mounts, func(m any) bool { return m.(map[string]any)["mountPath"] == tokenMountPath }) {
				continue
			}
			cm["volumeMounts"] = append(mounts, map[string]any{"name": vol, "readOnly": true, "mountPath": tokenMountPath})
			needed = true
		}
	}
	if needed && !hasVol {
		spec["volumes"] = append(vols, map[string]any{"name": vol, "projected": map[string]any{
			"defaultMode": 420, "sources": []any{map[string]any{"serviceAccountToken": map[string]any{"path": "token"}}}}})
	}
	return changed || needed
}

// automounts reports whether the ServiceAccount plugin mounts the token
// into pod: the Pod's field wins over the ServiceAccount's.
func (m clusterModel) automounts(pod map[string]any) bool {
	if v, ok := pod["spec"].(map[string]any)["automountServiceAccountToken"].(bool); ok {
		return v
	}
	return m.saAutomount
}

// handMountedEverywhere reports the one case graft cannot tell from the
// plugin's work (see tokenVolume): the ServiceAccount, which graft cannot
// see, turns automounting off, yet the Pod looks as the plugin leaves
// one: every container and init container has a mount at the token path,
// one of them of the first kube-api-access- volume.
func (m clusterModel) handMountedEverywhere(pod map[string]any) bool {
	spec := pod["spec"].(map[string]any)
	if _, set := spec["automountServiceAccountToken"].(bool); set || m.saAutomount {
		return false
	}
	vol := ""
	vols, _ := spec["volumes"].([]any)
	for _, v := range vols {
		if n := v.(map[string]any)["name"].(string); strings.HasPrefix(n, tokenVolumePrefix) {
			vol = n
			break
		}
	}
	all, seen := true, false
	eachContainer(pod, func(_ string, c map[string]any) {
		mounts, _ := c["volumeMounts"].([]any)
		i := slices.IndexFunc(mounts, func(m any) bool { return m.(map[string]any)["mountPath"] == tokenMountPath })
		all = all && i >= 0
		seen = seen || i >= 0 && mounts[i].(map[string]any)["name"] == vol
	})
	return all && seen
}

// dropTokenMounts removes the token path mount from the containers added
// says graft added.
func dropTokenMounts(p *corev1.Pod, added func(string) bool) {
	for _, l := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range l {
			if added(l[i].Name) {
				l[i].VolumeMounts = slices.DeleteFunc(l[i].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == tokenMountPath })
			}
		}
	}
}

// defaultRequests is SetDefaults_Pod's part that matters here: a request
// a container lacks defaults to its limit.
func defaultRequests(pod map[string]any) {
	eachContainer(pod, func(_ string, c map[string]any) {
		res, _ := c["resources"].(map[string]any)
		lim, _ := res["limits"].(map[string]any)
		if len(lim) == 0 {
			return
		}
		req, _ := res["requests"].(map[string]any)
		if req == nil {
			req = map[string]any{}
		}
		for k, v := range lim {
			if _, ok := req[k]; !ok {
				req[k] = v
			}
		}
		res["requests"] = req
	})
}

// knowable reports whether graft can learn from the first run all that
// the re-run would give its containers: the token volume's mount (the
// plugin mounted it somewhere graft sees) and every LimitRange default.
func (m clusterModel) knowable(pod map[string]any) bool {
	spec := pod["spec"].(map[string]any)
	if m.automounts(pod) {
		vols, _ := spec["volumes"].([]any)
		evidence := false
		for _, v := range vols {
			n := v.(map[string]any)["name"].(string)
			if !strings.HasPrefix(n, tokenVolumePrefix) {
				continue
			}
			eachContainer(pod, func(_ string, c map[string]any) {
				mounts, _ := c["volumeMounts"].([]any)
				evidence = evidence || slices.ContainsFunc(mounts, func(m any) bool {
					mm := m.(map[string]any)
					return mm["name"] == n && mm["mountPath"] == tokenMountPath
				})
			})
			break
		}
		if !evidence {
			return false
		}
	}
	ann, _ := pod["metadata"].(map[string]any)["annotations"].(map[string]any)
	record, _ := ann[names.LimitRangerAnnotation].(string)
	for r := range m.limits {
		if !recordNames(record, r, "limit") {
			return false
		}
	}
	for r := range m.requests {
		if !recordNames(record, r, "request") {
			return false
		}
	}
	return true
}

// recordNames reports whether LimitRanger's record lists resource r
// under kind ("request" or "limit") for some container.
func recordNames(record, r, kind string) bool {
	for _, e := range strings.Split(strings.TrimPrefix(record, limitRangerPrefix), "; ") {
		names, _, ok := strings.Cut(e, " "+kind+" for ")
		if ok && slices.Contains(strings.Split(names, ", "), r) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
