package inject

import "strings"

// graft's answer must be a fixed point of the API server's built-in
// mutating plugins, or the API server calls graft twice per Pod.
//
// After the webhooks have changed an object, the API server runs the whole
// mutating chain again, in-tree plugins first
// (k8s.io/apiserver/pkg/admission/reinvocation.go), and when that re-run
// changes the object it calls every IfNeeded webhook again
// (plugin/webhook/mutating/dispatcher.go: IsOutputChangedSinceLastWebhookInvocation,
// a semantic comparison after defaulting). Of the plugins kube-apiserver
// v1.36 enables by default (k8s.io/kubernetes pkg/kubeapiserver/options/plugins.go,
// DefaultOffAdmissionPlugins), two can change a Pod CREATE on the re-run
// because of what graft added, both by filling in containers that lack
// something (k8s.io/kubernetes plugin/pkg/admission/...):
//
//   - ServiceAccount (serviceaccount/admission.go, mountServiceAccountToken)
//     appends the token mount to every container and init container that
//     has no mount at the token path. Mirrored here: tokenVolume and the
//     splice in appendElement.
//   - LimitRanger (limitranger/admission.go, mergeContainerResources) sets
//     every default request and limit a container or init container lacks.
//     Mirrored in limitrange.go.
//
// The others leave a re-run unchanged: DefaultTolerationSeconds adds its
// tolerations only when absent (the first run added them), Priority and
// RuntimeClass set the same values again from fields graft never touches,
// PodSecurity and ResourceQuota only validate, PodTopologyLabels acts on
// pods/binding and the rest on other resources. Default-off plugins that
// would change graft's containers (AlwaysPullImages, say) behave like a
// foreign webhook: graft is called again and converges.

// The ServiceAccount plugin's names (serviceaccount/admission.go:
// ServiceAccountVolumeName + "-", DefaultAPITokenMountPath).
const (
	tokenVolumePrefix = "kube-api-access-"
	tokenMountPath    = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// tokenVolume returns the volume the ServiceAccount plugin mounts into
// every container without a mount at the token path, or "" when it would
// mount nothing into graft's containers on its re-run.
//
// The plugin mounts when the Pod is not a mirror Pod (graft skips those
// anyway) and automounting is on: spec.automountServiceAccountToken, else
// the ServiceAccount's field, else true. Its volume is the first whose
// name starts with kube-api-access-. graft cannot see the ServiceAccount,
// so it requires evidence that the plugin mounted the token on its first
// run, namely the state that run leaves: every container and init
// container has a mount at the token path, and one of them mounts that
// very volume there. Without it (automounting off on the ServiceAccount,
// a user's volume of that name mounted by hand in some containers, a
// container another webhook added before graft) graft adds nothing: a
// mount the plugin would not add must never appear, while a missing one
// costs no more than a second call. One case evidence cannot tell apart:
// a Pod whose every container mounts a kube-api-access- volume by hand,
// as a copy of a running Pod's manifest does, in a namespace whose
// ServiceAccount disables automounting. graft then mounts the Pod's own
// volume into its containers like the Pod's other containers.
func (p *pod) tokenVolume() string {
	if p.automountOff {
		return ""
	}
	vol := ""
	for _, v := range p.volumes {
		if strings.HasPrefix(v, tokenVolumePrefix) {
			vol = v
			break
		}
	}
	// The plugin's volume is projected: one of another kind, mounted at
	// the token path, would make graft's container one graft does not
	// render (own.go), so graft mounts none itself.
	if vol == "" || !p.projectedVolume(vol) {
		return ""
	}
	seen := false
	for i := range p.containers {
		c := &p.containers[i]
		at := -1
		for j, m := range p.mounts[c.mountsFrom:c.mountsTo] {
			if m.path == tokenMountPath {
				at = j
				break
			}
		}
		if at < 0 {
			return ""
		}
		seen = seen || p.mounts[c.mountsFrom+at].name == vol
	}
	for i := range p.initContainers {
		c := &p.initContainers[i]
		if !c.tokenPath {
			return ""
		}
		seen = seen || c.tokenVolume == vol
	}
	if !seen {
		return ""
	}
	return vol
}

// tokenSplice is where the token mount goes in an injected container's
// JSON: raw[:at] + pre + volume name + post + raw[end:]. Computed once per
// plan, so the request path only appends.
type tokenSplice struct {
	ok        bool // the container gets the mount (it has none at the path)
	at, end   int
	pre, post []byte
}

// The mount the plugin appends, {name, readOnly: true, mountPath}, with
// keys sorted like the rest of the element.
const (
	tokenMountPre  = `{"mountPath":"` + tokenMountPath + `","name":"`
	tokenMountPost = `","readOnly":true}`
)

// newTokenSplice finds where the token mount goes in a container's raw
// JSON (compact, keys sorted, as templates render it): appended to
// volumeMounts, or a volumeMounts key created in sorted position. A
// container that already mounts something at the token path gets nothing,
// as the plugin does.
func newTokenSplice(raw []byte) (tokenSplice, error) {
	sc := scanner{s: b2s(raw)}
	if err := sc.open('{'); err != nil {
		return tokenSplice{}, err
	}
	for first := true; ; first = false {
		more, err := sc.next('}', first)
		if err != nil {
			return tokenSplice{}, err
		}
		if !more {
			// No volumeMounts and no later key: append one before '}'.
			at := sc.i - 1
			return tokenSplice{ok: true, at: at, end: at,
				pre: []byte(`,"volumeMounts":[` + tokenMountPre), post: []byte(tokenMountPost + `]`)}, nil
		}
		keyAt := sc.i
		k, _, err := sc.key()
		if err != nil {
			return tokenSplice{}, err
		}
		switch {
		case k == "volumeMounts":
			return spliceIntoMounts(&sc)
		case k > "volumeMounts":
			return tokenSplice{ok: true, at: keyAt, end: keyAt,
				pre: []byte(`"volumeMounts":[` + tokenMountPre), post: []byte(tokenMountPost + `],`)}, nil
		}
		if err := sc.skip(); err != nil {
			return tokenSplice{}, err
		}
	}
}

// spliceIntoMounts handles a container's volumeMounts value at sc.
func spliceIntoMounts(sc *scanner) (tokenSplice, error) {
	if start := sc.i; sc.isNull() {
		return tokenSplice{ok: true, at: start, end: sc.i,
			pre: []byte(`[` + tokenMountPre), post: []byte(tokenMountPost + `]`)}, nil
	}
	n, taken := 0, false
	err := eachMount(sc, func(m mount) {
		n++
		taken = taken || m.path == tokenMountPath
	})
	if err != nil || taken {
		return tokenSplice{}, err
	}
	at := sc.i - 1 // the closing bracket
	pre := []byte(tokenMountPre)
	if n > 0 {
		pre = append([]byte{','}, pre...)
	}
	return tokenSplice{ok: true, at: at, end: at, pre: pre, post: []byte(tokenMountPost)}, nil
}

// appendElement appends el's JSON as this request injects it: the status
// this request writes, a container with the LimitRange defaults the Pod's
// namespace applies (rare, see limitrange.go) or with the token mount
// spliced in, or as rendered.
func (s *scratch) appendElement(dst []byte, el *element) []byte {
	if el.tmpl < 0 {
		dst = append(dst, '"')
		dst = append(dst, s.statusOut...)
		return append(dst, '"')
	}
	if s.resourced != nil {
		if raw := s.resourced[el.ref]; raw != nil {
			return append(dst, raw...)
		}
	}
	t := &el.token
	if s.tokenVolume == "" || !t.ok {
		return append(dst, el.raw...)
	}
	dst = append(dst, el.raw[:t.at]...)
	dst = append(dst, t.pre...)
	dst = append(dst, s.tokenVolume...)
	dst = append(dst, t.post...)
	return append(dst, el.raw[t.end:]...)
}
