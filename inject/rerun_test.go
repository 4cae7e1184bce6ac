package inject

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/graftdev/graft/bench/corpus"
	corev1 "k8s.io/api/core/v1"
)

func TestTokenSplice(t *testing.T) {
	const m = `{"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","name":"kube-api-access-x1","readOnly":true}`
	cases := []struct {
		name, raw, want string // want "" means no mount is added
	}{
		{"no mounts, no later key", `{"image":"i","name":"c"}`, `{"image":"i","name":"c","volumeMounts":[` + m + `]}`},
		{"no mounts, a later key", `{"image":"i","name":"c","workingDir":"/w"}`, `{"image":"i","name":"c","volumeMounts":[` + m + `],"workingDir":"/w"}`},
		{"only a later key", `{"workingDir":"/w"}`, `{"volumeMounts":[` + m + `],"workingDir":"/w"}`},
		{"empty list", `{"name":"c","volumeMounts":[]}`, `{"name":"c","volumeMounts":[` + m + `]}`},
		{"null list", `{"name":"c","volumeMounts":null,"workingDir":"/w"}`, `{"name":"c","volumeMounts":[` + m + `],"workingDir":"/w"}`},
		{"other mounts", `{"name":"c","volumeMounts":[{"mountPath":"/a","name":"a"}],"z":1}`, `{"name":"c","volumeMounts":[{"mountPath":"/a","name":"a"},` + m + `],"z":1}`},
		{"token path taken", `{"name":"c","volumeMounts":[{"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","name":"own"}]}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp, err := newTokenSplice([]byte(c.raw))
			if err != nil {
				t.Fatal(err)
			}
			if sp.ok != (c.want != "") {
				t.Fatalf("ok = %v, want %v", sp.ok, c.want != "")
			}
			el := &element{raw: []byte(c.raw), token: sp}
			s := &scratch{tokenVolume: "kube-api-access-x1"}
			got := string(s.appendElement(nil, el))
			want := c.want
			if want == "" {
				want = c.raw
			}
			if got != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("not JSON: %s", got)
			}
			s.tokenVolume = "" // a Pod without the plugin's volume
			if got := string(s.appendElement(nil, el)); got != c.raw {
				t.Fatalf("without a token volume: %s", got)
			}
		})
	}
	for _, bad := range []string{``, `[]`, `{"name":`, `{"volumeMounts":[{"mountPath":1}]}`} {
		if _, err := newTokenSplice([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestTokenVolume pins when graft mirrors the ServiceAccount plugin: only
// with evidence that the plugin mounted the Pod's first kube-api-access-
// volume at the token path.
func TestTokenVolume(t *testing.T) {
	const path = `"/var/run/secrets/kubernetes.io/serviceaccount"`
	app := func(mounts string) string { return `{"name":"app","volumeMounts":[` + mounts + `]}` }
	tok := `{"name":"kube-api-access-abcde","mountPath":` + path + `,"readOnly":true}`
	cases := []struct {
		name, spec, want string
	}{
		{"plugin mounted it", `{"containers":[` + app(tok) + `],"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[]}}]}`, "kube-api-access-abcde"},
		{"volumes before containers", `{"volumes":[{"name":"cfg"},{"name":"kube-api-access-abcde","projected":{"sources":[]}}],"containers":[` + app(tok) + `]}`, "kube-api-access-abcde"},
		{"automount null", `{"automountServiceAccountToken":null,"containers":[` + app(tok) + `],"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[]}}]}`, "kube-api-access-abcde"},
		{"automount true", `{"automountServiceAccountToken":true,"containers":[` + app(tok) + `],"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[]}}]}`, "kube-api-access-abcde"},
		{"automount false", `{"automountServiceAccountToken":false,"containers":[` + app(tok) + `],"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[]}}]}`, ""},
		{"no volume", `{"containers":[` + app(``) + `]}`, ""},
		{"volume mounted elsewhere", `{"containers":[` + app(`{"name":"kube-api-access-x","mountPath":"/x"}`) + `],"volumes":[{"name":"kube-api-access-x"}]}`, ""},
		{"volume not mounted", `{"containers":[` + app(``) + `],"volumes":[{"name":"kube-api-access-x"}]}`, ""},
		{"path taken by another volume", `{"containers":[` + app(`{"name":"mine","mountPath":`+path+`}`) + `],"volumes":[{"name":"kube-api-access-x"},{"name":"mine"}]}`, ""},
		{"mounted by an init container only", `{"initContainers":[{"name":"i","volumeMounts":[` + tok + `]}],"containers":[` + app(`{"name":"mine","mountPath":`+path+`}`) + `],"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[]}},{"name":"mine"}]}`, "kube-api-access-abcde"},
		{"a container without a mount at the path", `{"containers":[` + app(tok) + `,` + app(``) + `],"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[]}}]}`, ""},
		{"an init container without a mount at the path", `{"initContainers":[{"name":"i"}],"containers":[` + app(tok) + `],"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[]}}]}`, ""},
		{"every container mounts something at the path, none the volume", `{"containers":[` + app(`{"name":"mine","mountPath":`+path+`}`) + `],"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[]}},{"name":"mine"}]}`, ""},
		{"the first prefixed volume counts", `{"containers":[` + app(tok) + `],"volumes":[{"name":"kube-api-access-user"},{"name":"kube-api-access-abcde","projected":{"sources":[]}}]}`, ""},
		{"the plugin's volume is not projected", `{"containers":[` + app(tok) + `],"volumes":[{"name":"kube-api-access-abcde","emptyDir":{}}]}`, ""},
		{"no dash, no prefix", `{"containers":[` + app(`{"name":"kube-api-access","mountPath":`+path+`}`) + `],"volumes":[{"name":"kube-api-access"}]}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p pod
			p.reset()
			p.spec = c.spec
			if err := parsePodSpec(&p, nil); err != nil {
				t.Fatal(err)
			}
			if got := p.tokenVolume(); got != c.want {
				t.Fatalf("tokenVolume() = %q, want %q", got, c.want)
			}
		})
	}
}

// TestTokenCorpus: the benchmarks' token Pod (corpus.Token) takes the
// mirrored mount, so BenchmarkAdmit/token and TestZeroAllocs measure the
// splice, not the plain path.
func TestTokenCorpus(t *testing.T) {
	e := newTestEngine(t, DefaultConfig())
	var pod corev1.Pod
	if err := json.Unmarshal(applyResponse(t, corpus.Review(corpus.Token), mustAdmit(t, e, corpus.Review(corpus.Token), Options{})), &pod); err != nil {
		t.Fatal(err)
	}
	tokenVol := pod.Spec.Volumes[3].Name
	if !strings.HasPrefix(tokenVol, tokenVolumePrefix) {
		t.Fatalf("corpus volume 3 is %q, want the token volume", tokenVol)
	}
	proxy := pod.Spec.InitContainers[0]
	want := corev1.VolumeMount{Name: tokenVol, ReadOnly: true, MountPath: tokenMountPath}
	if proxy.Name != "graft-proxy" || len(proxy.VolumeMounts) == 0 || !reflect.DeepEqual(proxy.VolumeMounts[len(proxy.VolumeMounts)-1], want) {
		t.Fatalf("graft-proxy mounts %+v, want %+v last", proxy.VolumeMounts, want)
	}
}
