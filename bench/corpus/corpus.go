// Package corpus generates deterministic AdmissionReview requests for the
// engine's benchmarks and tests and for the load tests: the same seed gives
// the same bytes, so figures from different runs compare like with like.
package corpus

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/graftdev/graft/internal/names"
)

// Names of the corpora.
const (
	Small   = "small"   // ~6 KB: 2 containers, 3 volumes
	Medium  = "medium"  // ~15 KB: 6 containers
	Large   = "large"   // ~49 KB: 20 containers
	Huge    = "huge"    // ~500 KB: one container with 5,000 env vars
	Skip    = "skip"    // small, opted out by label
	V1beta1 = "v1beta1" // small, as admission.k8s.io/v1beta1
	Prepend = "prepend" // small with user init containers: a sidecar goes to index 0
	// Token is small as kube-apiserver's ServiceAccount plugin leaves it:
	// a projected token volume mounted into every container, so graft
	// gives its own containers the same mount.
	Token = "token"
	// Injected is small as graft's default profile leaves it: nothing to add.
	// It is checked in (injected.json) because this package cannot import the
	// engine; TestInjectedIsCurrent fails when it goes stale.
	Injected = "injected"
)

//go:embed injected.json
var injectedPod []byte

// Names lists the corpora Review knows, in a stable order.
func Names() []string {
	return []string{Small, Medium, Large, Huge, Skip, V1beta1, Prepend, Injected, Token}
}

// Spec shapes one generated Pod.
type Spec struct {
	Containers    int
	EnvPerContain int
	// EnvValuePad lengthens plain env values by this many characters.
	EnvValuePad    int
	InitContainers int
	Volumes        int
	Labels         map[string]string
	APIVersion     string // admission.k8s.io/v1 (default) or v1beta1
	Seed           uint64
	// ServiceAccountToken mounts a token volume as the ServiceAccount
	// admission plugin does.
	ServiceAccountToken bool
}

// Review returns the named corpus request. It panics on an unknown name:
// corpus names are constants in callers.
func Review(name string) []byte {
	if name == Injected {
		return Marshal("", "7c5e2b1a-0000-4000-8000-000000000009", "CREATE", "shop", json.RawMessage(injectedPod))
	}
	s, ok := specs()[name]
	if !ok {
		panic("corpus: unknown corpus " + strconv.Quote(name))
	}
	return Build(s)
}

func specs() map[string]Spec {
	return map[string]Spec{
		Small:   {Containers: 2, EnvPerContain: 12, Volumes: 3, Seed: 1},
		Medium:  {Containers: 6, EnvPerContain: 12, Volumes: 6, Seed: 2},
		Large:   {Containers: 20, EnvPerContain: 8, Volumes: 12, Seed: 3},
		Huge:    {Containers: 1, EnvPerContain: 5000, EnvValuePad: 40, Volumes: 3, Seed: 4},
		Skip:    {Containers: 2, EnvPerContain: 12, Volumes: 3, Seed: 1, Labels: map[string]string{names.Inject: names.OptOutValue}},
		V1beta1: {Containers: 2, EnvPerContain: 12, Volumes: 3, Seed: 1, APIVersion: "admission.k8s.io/v1beta1"},
		Prepend: {Containers: 2, EnvPerContain: 12, InitContainers: 2, Volumes: 3, Seed: 1},
		Token:   {Containers: 2, EnvPerContain: 12, Volumes: 3, Seed: 1, ServiceAccountToken: true},
	}
}

// Build generates the AdmissionReview for s.
func Build(s Spec) []byte {
	r := rand.New(rand.NewPCG(s.Seed, 0x67726166))
	return Marshal(s.APIVersion, fmt.Sprintf("7c5e2b1a-0000-4000-8000-%012d", s.Seed), "CREATE", "shop", Pod(r, s))
}

// Marshal writes an AdmissionReview request around object with the fields
// in the order the API server writes them (uid and operation before the
// object), so benchmarks read what production reads.
func Marshal(apiVersion, uid, op, namespace string, object any) []byte {
	if apiVersion == "" {
		apiVersion = "admission.k8s.io/v1"
	}
	gvk := map[string]any{"group": "", "version": "v1", "kind": "Pod"}
	gvr := map[string]any{"group": "", "version": "v1", "resource": "pods"}
	fields := []struct {
		key string
		val any
	}{
		{"uid", uid}, {"kind", gvk}, {"resource", gvr}, {"requestKind", gvk}, {"requestResource", gvr},
		{"namespace", namespace}, {"operation", op},
		{"userInfo", map[string]any{"username": "system:serviceaccount:kube-system:replicaset-controller", "uid": "b1f7c0de-5a5a-4b4b-9c9c-0123456789ab", "groups": []any{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}},
		{"object", object}, {"oldObject", nil}, {"dryRun", false},
		{"options", map[string]any{"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}},
	}
	b := []byte(`{"kind":"AdmissionReview","apiVersion":` + strconv.Quote(apiVersion) + `,"request":{`)
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, f.key)
		b = append(b, ':')
		v, err := json.Marshal(f.val)
		if err != nil {
			panic(fmt.Sprintf("corpus: marshal %s: %v", f.key, err)) // only plain maps and slices
		}
		b = append(b, v...)
	}
	return append(b, "}}"...)
}

// Pod generates a realistic Pod: env with valueFrom, ports, mounts, probes,
// resources and securityContext on every container.
func Pod(r *rand.Rand, s Spec) map[string]any {
	app := "checkout-" + word(r)
	labels := map[string]any{"app": app, "pod-template-hash": hex(r, 10), "tier": "backend", "team": "payments"}
	for k, v := range s.Labels {
		labels[k] = v
	}
	var containers, inits []any
	for i := range s.Containers {
		containers = append(containers, container(r, fmt.Sprintf("%s-%d", app, i), s.EnvPerContain, s.EnvValuePad, s.Volumes))
	}
	for i := range s.InitContainers {
		c := container(r, fmt.Sprintf("init-%d", i), 2, 0, 1)
		delete(c, "livenessProbe")
		delete(c, "readinessProbe")
		delete(c, "ports")
		inits = append(inits, c)
	}
	var volumes []any
	for i := range s.Volumes {
		volumes = append(volumes, volume(r, i))
	}
	spec := map[string]any{
		"containers":                    containers,
		"volumes":                       volumes,
		"restartPolicy":                 "Always",
		"terminationGracePeriodSeconds": 30,
		"dnsPolicy":                     "ClusterFirst",
		"serviceAccountName":            app,
		"securityContext":               map[string]any{"runAsNonRoot": true, "fsGroup": 2000, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
		"schedulerName":                 "default-scheduler",
		"tolerations": []any{
			map[string]any{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
			map[string]any{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
		},
		"priority":           0,
		"enableServiceLinks": true,
	}
	if len(inits) > 0 {
		spec["initContainers"] = inits
	}
	if s.ServiceAccountToken {
		mountToken(r, spec, append(containers, inits...))
	}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": map[string]any{
			"generateName": app + "-" + hex(r, 10) + "-",
			"namespace":    "shop",
			"labels":       labels,
			"annotations": map[string]any{
				"prometheus.io/scrape":              "true",
				"prometheus.io/port":                "9090",
				"kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z",
			},
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app + "-" + hex(r, 10), "uid": "0d0c0b0a-1111-4222-8333-" + hex(r, 12), "controller": true, "blockOwnerDeletion": true}},
		},
		"spec": spec,
	}
}

func container(r *rand.Rand, name string, nEnv, pad, nVolumes int) map[string]any {
	var env []any
	for i := range nEnv {
		switch i % 4 {
		case 1:
			env = append(env, map[string]any{"name": fmt.Sprintf("POD_FIELD_%d", i), "valueFrom": map[string]any{"fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "metadata.name"}}})
		case 2:
			env = append(env, map[string]any{"name": fmt.Sprintf("SECRET_%d", i), "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "creds-" + word(r), "key": "password"}}})
		default:
			env = append(env, map[string]any{"name": fmt.Sprintf("SETTING_%d", i), "value": word(r) + "-" + hex(r, 8+pad)})
		}
	}
	var mounts []any
	for i := range nVolumes {
		mounts = append(mounts, map[string]any{"name": fmt.Sprintf("vol-%d", i), "mountPath": fmt.Sprintf("/var/lib/app/vol-%d", i), "readOnly": i%2 == 0})
	}
	probe := func(path string) map[string]any {
		return map[string]any{"httpGet": map[string]any{"path": path, "port": 8080, "scheme": "HTTP"}, "initialDelaySeconds": 5, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3}
	}
	return map[string]any{
		"name":            name,
		"image":           "registry.local/shop/" + name + ":1." + strconv.Itoa(r.IntN(40)) + ".0",
		"imagePullPolicy": "IfNotPresent",
		"args":            []any{"--port=8080", "--log-format=json", "--region=" + word(r)},
		"ports": []any{
			map[string]any{"name": "http", "containerPort": 8080, "protocol": "TCP"},
			map[string]any{"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
		},
		"env":            env,
		"resources":      map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "256Mi"}, "limits": map[string]any{"cpu": "1", "memory": "512Mi"}},
		"volumeMounts":   mounts,
		"livenessProbe":  probe("/healthz"),
		"readinessProbe": probe("/readyz"),
		"securityContext": map[string]any{
			"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "runAsUser": 1000,
			"capabilities": map[string]any{"drop": []any{"ALL"}},
		},
		"terminationMessagePath":   "/dev/termination-log",
		"terminationMessagePolicy": "File",
	}
}

// mountToken does what kube-apiserver's ServiceAccount admission plugin
// does to a Pod: a projected token volume, mounted read-only at the token
// path of every container.
func mountToken(r *rand.Rand, spec map[string]any, containers []any) {
	name := "kube-api-access-" + hex(r, 5)
	for _, c := range containers {
		m := c.(map[string]any)
		mounts, _ := m["volumeMounts"].([]any)
		m["volumeMounts"] = append(mounts, map[string]any{"name": name, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})
	}
	spec["volumes"] = append(spec["volumes"].([]any), map[string]any{"name": name, "projected": map[string]any{
		"defaultMode": 420,
		"sources": []any{
			map[string]any{"serviceAccountToken": map[string]any{"expirationSeconds": 3607, "path": "token"}},
			map[string]any{"configMap": map[string]any{"name": "kube-root-ca.crt", "items": []any{map[string]any{"key": "ca.crt", "path": "ca.crt"}}}},
			map[string]any{"downwardAPI": map[string]any{"items": []any{map[string]any{"path": "namespace", "fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "metadata.namespace"}}}}},
		},
	}})
}

func volume(r *rand.Rand, i int) map[string]any {
	name := fmt.Sprintf("vol-%d", i)
	switch i % 3 {
	case 0:
		return map[string]any{"name": name, "configMap": map[string]any{"name": "cfg-" + word(r), "defaultMode": 420}}
	case 1:
		return map[string]any{"name": name, "secret": map[string]any{"secretName": "sec-" + word(r), "defaultMode": 420}}
	}
	return map[string]any{"name": name, "emptyDir": map[string]any{}}
}

var words = []string{"amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron", "iris", "juniper", "kestrel", "lumen", "maple", "north", "onyx", "pine"}

func word(r *rand.Rand) string { return words[r.IntN(len(words))] }

func hex(r *rand.Rand, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.IntN(16)]
	}
	return string(b)
}
