package inject

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// compareRender is a render as the engine keeps it.
func compareRender(t testing.TB, raw string) *rnode {
	t.Helper()
	n, err := newRender([]byte(raw), &corev1.Container{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// sameContainer compares a Pod's container (JSON) with a render, in a
// Pod whose spec is spec, and returns whether they are one and where
// they differ.
func sameContainer(t testing.TB, render *rnode, tokenOK bool, spec, container string) (bool, string) {
	t.Helper()
	var p pod
	p.reset()
	p.spec = spec
	if err := parsePodSpec(&p, nil); err != nil {
		t.Fatal(err)
	}
	d := differ{p: &p, tokenOK: tokenOK}
	sc := scanner{s: container}
	ok := d.same(&sc, render, shContainer)
	return ok, d.where()
}

// TestCompare pins what the comparator takes for graft's render: the
// same value however spelled, what the API server defaults and the
// ServiceAccount plugin adds, fields set to what says nothing, and
// nothing else.
func TestCompare(t *testing.T) {
	const render = `{"name":"side","image":"img:1","args":["--a=1","--b"],
		"ports":[{"name":"health","containerPort":9000}],
		"env":[{"name":"N","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},
		       {"name":"M","valueFrom":{"resourceFieldRef":{"resource":"limits.memory"}}}],
		"readinessProbe":{"httpGet":{"path":"/ready","port":9000},"periodSeconds":5},
		"lifecycle":{"preStop":{"httpGet":{"port":9000}}},
		"resources":{"limits":{"cpu":"1"}},
		"restartPolicy":"Always",
		"securityContext":{"runAsUser":1000,"runAsNonRoot":true,"allowPrivilegeEscalation":false,"readOnlyRootFilesystem":false},
		"volumeMounts":[{"name":"data","mountPath":"/data","readOnly":false}]}`
	n := compareRender(t, render)
	const projected = `{"volumes":[{"name":"kube-api-access-abc","projected":{"sources":[]}},{"name":"kube-api-access-dir","emptyDir":{}}]}`
	const hostNet = `{"hostNetwork":true}`
	// The render with one member replaced or added.
	with := func(member string) string {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(render), &m); err != nil {
			t.Fatal(err)
		}
		var add map[string]json.RawMessage
		if err := json.Unmarshal([]byte("{"+member+"}"), &add); err != nil {
			t.Fatal(err)
		}
		for k, v := range add {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	without := func(key string) string {
		var m map[string]json.RawMessage
		_ = json.Unmarshal([]byte(render), &m)
		delete(m, key)
		b, _ := json.Marshal(m)
		return string(b)
	}
	stored := `"env":[{"name":"N","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}},
		{"name":"M","valueFrom":{"resourceFieldRef":{"resource":"limits.memory","divisor":"0"}}}]`
	for _, tt := range []struct {
		name, spec, container string
		tokenOK               bool
		same                  bool
		where                 string
	}{
		{"as rendered", `{}`, render, false, true, ""},
		{"respelled", `{}`, `{"image":"\u0069mg:1","name":"side","args":["--a\u003d1","--b"],"ports":[{"containerPort":9000.0,"name":"health"}],` +
			stored[:len(stored)-1] + `],"readinessProbe":{"periodSeconds":5,"httpGet":{"port":9000,"path":"\/ready"}},"lifecycle":{"preStop":{"httpGet":{"port":9000}}},` +
			`"restartPolicy":"Always","securityContext":{"runAsNonRoot":true,"runAsUser":1000,"allowPrivilegeEscalation":false,"readOnlyRootFilesystem":false},"volumeMounts":[{"mountPath":"/data","name":"data"}]}`, false, true, ""},
		{"as the API server stores it", `{}`, with(stored + `,"imagePullPolicy":"IfNotPresent","terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",
			"ports":[{"name":"health","containerPort":9000,"protocol":"TCP"}],
			"readinessProbe":{"httpGet":{"path":"/ready","port":9000,"scheme":"HTTP"},"periodSeconds":5,"timeoutSeconds":1,"successThreshold":1,"failureThreshold":3},
			"lifecycle":{"preStop":{"httpGet":{"port":9000,"path":"/","scheme":"HTTP"}}}`), false, true, ""},
		{"resources and the like", `{}`, with(`"resources":{"requests":{"cpu":"9"}},"resizePolicy":[{"resourceName":"cpu","restartPolicy":"NotRequired"}],"stdin":true,"stdinOnce":true,"tty":true,"imagePullPolicy":"Always"`), false, true, ""},
		{"nothing said", `{}`, with(`"command":[],"workingDir":"","envFrom":null,"lifecycle":{"preStop":{"httpGet":{"port":9000}},"postStart":null},"securityContext":{"runAsUser":1000,"runAsNonRoot":true,"allowPrivilegeEscalation":false,"readOnlyRootFilesystem":false,"privileged":false,"capabilities":{}}`), false, true, ""},
		// A false graft sets is no unset field: allowPrivilegeEscalation
		// unset is true.
		{"a false unset", `{}`, with(`"securityContext":{"runAsUser":1000,"runAsNonRoot":true,"allowPrivilegeEscalation":false}`), false, false, "securityContext.readOnlyRootFilesystem"},
		{"the token mount", projected, with(`"volumeMounts":[{"name":"data","mountPath":"/data"},{"name":"kube-api-access-abc","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}]`), true, true, ""},
		{"the token mount where graft has its own there", projected, with(`"volumeMounts":[{"name":"data","mountPath":"/data"},{"name":"kube-api-access-abc","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}]`), false, false, "volumeMounts[1]"},
		{"two token mounts", projected, with(`"volumeMounts":[{"name":"kube-api-access-abc","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"},{"name":"data","mountPath":"/data"},{"name":"kube-api-access-abc","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}]`), true, false, "volumeMounts[2]"},
		{"a token mount of another kind", projected, with(`"volumeMounts":[{"name":"data","mountPath":"/data"},{"name":"kube-api-access-dir","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}]`), true, false, "volumeMounts[1]"},
		{"a token mount with a subPath", projected, with(`"volumeMounts":[{"name":"data","mountPath":"/data"},{"name":"kube-api-access-abc","readOnly":true,"subPath":"token","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}]`), true, false, "volumeMounts[1]"},
		{"hostPort in a hostNetwork Pod", hostNet, with(`"ports":[{"name":"health","containerPort":9000,"hostPort":9000}]`), false, true, ""},
		{"hostPort elsewhere", `{}`, with(`"ports":[{"name":"health","containerPort":9000,"hostPort":9000}]`), false, false, "ports[0].hostPort"},
		{"another port protocol", `{}`, with(`"ports":[{"name":"health","containerPort":9000,"protocol":"UDP"}]`), false, false, "ports[0].protocol"},
		{"a port as a string", `{}`, with(`"ports":[{"name":"health","containerPort":"9000"}]`), false, false, "ports[0].containerPort"},
		{"a defaulted field at another value", `{}`, with(`"readinessProbe":{"httpGet":{"path":"/ready","port":9000},"periodSeconds":5,"timeoutSeconds":30}`), false, false, "readinessProbe.timeoutSeconds"},
		{"another scheme", `{}`, with(`"lifecycle":{"preStop":{"httpGet":{"port":9000,"scheme":"HTTPS"}}}`), false, false, "lifecycle.preStop.httpGet.scheme"},
		{"root", `{}`, with(`"securityContext":{"runAsUser":0,"runAsNonRoot":true,"allowPrivilegeEscalation":false,"readOnlyRootFilesystem":false}`), false, false, "securityContext.runAsUser"},
		{"escalation unset", `{}`, with(`"securityContext":{"runAsUser":1000,"runAsNonRoot":true,"readOnlyRootFilesystem":false}`), false, false, "securityContext.allowPrivilegeEscalation"},
		{"a zero that says something", `{}`, with(`"securityContext":{"runAsUser":1000,"runAsGroup":0,"runAsNonRoot":true,"allowPrivilegeEscalation":false,"readOnlyRootFilesystem":false}`), false, false, "securityContext.runAsGroup"},
		{"an arg more", `{}`, with(`"args":["--a=1","--b","--c"]`), false, false, "args[2]"},
		{"an arg less", `{}`, with(`"args":["--a=1"]`), false, false, "args[1]"},
		{"an escaped difference", `{}`, with(`"args":["--a\u003d2","--b"]`), false, false, "args[0]"},
		{"no restartPolicy", `{}`, without("restartPolicy"), false, false, "restartPolicy"},
		{"a field no version knows", `{}`, with(`"x-future":{"deep":true}`), false, false, "x-future"},
		{"a key twice", `{}`, `{"name":"side","image":"img:1","image":"evil:1"}`, false, false, "image"},
		{"not an object", `{}`, `["side"]`, false, false, ""},
		{"not JSON", `{}`, `{"name":"side","args":[tru`, false, false, "args[0]"},
		{"not JSON where graft has nothing", `{}`, `{"name":"side","x":tru`, false, false, "x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			same, where := sameContainer(t, n, tt.tokenOK, tt.spec, tt.container)
			if same != tt.same || where != tt.where {
				t.Fatalf("same %v at %q, want %v at %q", same, where, tt.same, tt.where)
			}
		})
	}
	// A native sidecar's restartPolicy is left to repair.go.
	var p pod
	d := differ{p: &p, skipRestart: true}
	if sc := (scanner{s: without("restartPolicy")}); !d.same(&sc, n, shContainer) {
		t.Fatalf("without restartPolicy, skipped: differs at %s", d.where())
	}
}

// TestCompareAllocatesNothing: the comparison runs on the request path.
func TestCompareAllocatesNothing(t *testing.T) {
	n := compareRender(t, `{"name":"side","image":"img:1","args":["--a","--b"],"env":[{"name":"N","value":"\u0026"}],"securityContext":{"runAsUser":1}}`)
	container := `{"name":"side","image":"img:1","args":["--a","--b"],"env":[{"name":"N","value":"\u0026"}],"securityContext":{"runAsUser":1},"resources":{"limits":{"cpu":"1"}},"imagePullPolicy":"Always"}`
	var p pod
	if got := testing.AllocsPerRun(100, func() {
		d := differ{p: &p}
		sc := scanner{s: container}
		if !d.same(&sc, n, shContainer) {
			t.Fatal("differs")
		}
	}); got != 0 {
		t.Fatalf("%v allocations per comparison", got)
	}
}

// FuzzCompare: the comparator reads a Pod author's bytes. It must not
// panic, and its verdict is about values: the same JSON value spelled
// otherwise (keys reordered, strings escaped, as encoding/json writes it)
// gets the same verdict.
func FuzzCompare(f *testing.F) {
	const render = `{"name":"graft-agent","image":"ghcr.io/graftdev/agent:1.0.0","restartPolicy":"Always","args":["--listen=127.0.0.1:9901"],
		"env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}],
		"readinessProbe":{"httpGet":{"path":"/","port":9901}},"securityContext":{"runAsUser":65532,"allowPrivilegeEscalation":false}}`
	n := compareRender(f, render)
	f.Add(render)
	f.Add(`{"name":"graft-agent","image":"ghcr.io/graftdev/agent:1.0.0","restartPolicy":"Always","args":["--listen=127.0.0.1:9901"],"env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}}],"readinessProbe":{"httpGet":{"path":"/","port":9901,"scheme":"HTTP"},"timeoutSeconds":1},"securityContext":{"runAsUser":65532,"allowPrivilegeEscalation":false},"volumeMounts":[{"name":"kube-api-access-a","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}]}`)
	f.Add(`{"name":"graft-agent","securityContext":{"runAsUser":0}}`)
	const spec = `{"volumes":[{"name":"kube-api-access-a","projected":{}}]}`
	f.Fuzz(func(t *testing.T, container string) {
		same, _ := sameContainer(t, n, true, spec, container)
		var v any
		if json.Unmarshal([]byte(container), &v) != nil || !json.Valid([]byte(container)) {
			return
		}
		again, err := reencode(rand.New(rand.NewPCG(uint64(len(container)), 1)), []byte(container))
		if err != nil {
			return
		}
		if same2, where := sameContainer(t, n, true, spec, string(again)); same2 != same {
			t.Fatalf("%s: %v\n%s: %v (%s)", container, same, again, same2, where)
		}
	})
}
