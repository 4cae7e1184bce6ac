// Package podcorpus generates the acceptance corpus of issue 21: Pods a
// user may create, each valid without graft, spanning what an injector
// must keep valid. Pod-level resources (with and without requests, with
// limits), LimitRange namespaces, Windows by spec.os and by node selector
// or affinity, Pod- and container-level security contexts (restricted-
// compliant ones included), user init containers and native sidecars,
// ports, names, env vars, mount paths and uids at or near graft's,
// hostNetwork, the ServiceAccount token automounted or not, and large
// Pods.
//
// Generate is deterministic for a seed: Pod i's main trait is trait i
// modulo the number of traits, so any prefix of 2 x len(Traits()) Pods
// covers every trait; the rest (resources, ports, security, ...) is drawn
// from the seeded generator.
package podcorpus

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod is one corpus Pod and where it must be created.
type Pod struct {
	// Trait is the Pod's main trait (one of Traits).
	Trait string
	// LimitRange: create it in a namespace with LimitRange (see
	// LimitRange), for it and for the namespace it is compared with.
	LimitRange bool
	Pod        *corev1.Pod
}

// Traits are the Pods' main traits, in the order Pods take them.
func Traits() []string {
	return []string{
		"plain",
		"pod-resources-requests",      // spec.resources.requests equal to the containers' aggregate
		"pod-resources-limits",        // spec.resources requests and limits, some slack
		"pod-resources-no-container",  // spec.resources, containers without resources
		"container-resources",         // requests and limits on every container
		"limitrange",                  // in a LimitRange namespace, containers without resources
		"windows-os",                  // spec.os.name: windows
		"windows-node-selector",       // nodeSelector kubernetes.io/os: windows
		"windows-affinity",            // required node affinity on kubernetes.io/os
		"linux-explicit",              // spec.os.name: linux and nodeSelector linux
		"restricted-pod-level",        // restricted: seccomp and runAsNonRoot at Pod level
		"restricted-container-level",  // restricted: every field per container, none at Pod level
		"baseline",                    // root, default capabilities, NET_BIND_SERVICE
		"privileged",                  // root with NET_ADMIN and NET_RAW: privileged level only
		"uid-1337",                    // the mesh proxy's uid for the app
		"init-container",              // a user init container
		"native-sidecar",              // a user native sidecar
		"init-and-sidecar",            // both, sidecar first
		"graft-ports",                 // containerPorts graft's sidecars use: 15021, 13133, 2020, ...
		"graft-port-names",            // port names graft's sidecars use: proxy-health, otel-health, ...
		"graft-like-names",            // container and volume names near graft's (graft-proxy-v2, envoy)
		"graft-names",                 // a container named exactly like a graft sidecar
		"graft-env-and-mounts",        // env names and mount paths graft adds to app containers
		"host-network",                // hostNetwork: true
		"automount-off",               // automountServiceAccountToken: false
		"automount-on",                // automountServiceAccountToken: true
		"large",                       // many containers, env vars, volumes and long args
		"restricted-large-resources",  // restricted, pod-level resources, sidecar and init container
		"windows-container-resources", // Windows with container resources (pod-level ones are Linux-only)
		"restricted-uid-1337-sidecar", // restricted, runAsUser 1337, a native sidecar of its own
	}
}

// LimitRange is the LimitRange of the corpus's LimitRange namespaces:
// defaults for containers that set no resources, no minimum or maximum,
// limits above any request the corpus sets, so it never makes a corpus
// Pod invalid by itself.
func LimitRange() *corev1.LimitRange {
	return &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}}},
	}
}

// Generate returns n Pods from seed.
func Generate(seed uint64, n int) []Pod {
	r := rand.New(rand.NewPCG(seed, 21))
	traits := Traits()
	out := make([]Pod, n)
	for i := range n {
		g := &gen{r: r, trait: traits[i%len(traits)], name: fmt.Sprintf("c%04d", i)}
		out[i] = g.pod()
	}
	return out
}

type gen struct {
	r     *rand.Rand
	trait string
	name  string
	// ports and portNames used so far in the Pod: unique within it.
	ports     []int32
	portNames []string
}

func (g *gen) is(traits ...string) bool { return slices.Contains(traits, g.trait) }

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func (g *gen) pick(opts ...string) string { return opts[g.r.IntN(len(opts))] }

// security is how a Pod's security contexts are written.
type security int

const (
	secNone security = iota
	secRestrictedPod
	secRestrictedContainers
	secBaseline
	secPrivileged
	secWindows
)

func (g *gen) pod() Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: g.name, Labels: map[string]string{"app": g.name, "corpus.graft.dev/trait": g.trait}}}
	out := Pod{Trait: g.trait, Pod: p}

	// Containers.
	n := 1 + g.r.IntN(3)
	if g.is("large") {
		n = 6 + g.r.IntN(5)
	}
	for i := range n {
		name := "app"
		if i > 0 {
			name = fmt.Sprintf("c%d", i)
		}
		p.Spec.Containers = append(p.Spec.Containers, g.container(name))
	}
	switch {
	case g.is("graft-like-names"):
		p.Spec.Containers = append(p.Spec.Containers, g.container(g.pick("graft-proxy-v2", "envoy", "proxy", "graft", "graft-agent-2")))
	case g.is("graft-names"):
		p.Spec.Containers = append(p.Spec.Containers, g.container(g.pick("graft-proxy", "graft-agent", "graft-otel-agent", "graft-log-shipper", "graft-secrets-agent")))
	}
	if g.is("init-container", "init-and-sidecar", "restricted-large-resources") || g.chance(0.1) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, g.container("setup"))
	}
	if g.is("native-sidecar", "init-and-sidecar", "restricted-large-resources", "restricted-uid-1337-sidecar") || g.chance(0.1) {
		sc := g.container("user-sidecar")
		always := corev1.ContainerRestartPolicyAlways
		sc.RestartPolicy = &always
		// Sidecar first: it runs before the user's init container.
		p.Spec.InitContainers = append([]corev1.Container{sc}, p.Spec.InitContainers...)
	}

	// Ports, on app containers.
	for i := range p.Spec.Containers {
		k := g.r.IntN(3)
		if g.is("graft-ports", "graft-port-names") && i == 0 {
			k = 2
		}
		for range k {
			if port, ok := g.port(); ok {
				p.Spec.Containers[i].Ports = append(p.Spec.Containers[i].Ports, port)
			}
		}
	}

	// Volumes and mounts.
	nv := g.r.IntN(3)
	if g.is("large") {
		nv = 10
	}
	for i := range nv {
		name := fmt.Sprintf("data-%d", i)
		if g.is("graft-like-names") && i == 0 {
			name = g.pick("graft-agent-run-2", "graft", "graft-logs-old")
		}
		v := corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
		if g.chance(0.3) {
			v.VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg-" + name}}}
		}
		p.Spec.Volumes = append(p.Spec.Volumes, v)
		c := &p.Spec.Containers[g.r.IntN(len(p.Spec.Containers))]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/data/" + name})
	}
	if g.is("graft-env-and-mounts") {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "own-run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		c := &p.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "own-run", MountPath: g.pick("/var/run/graft-agent", "/var/log", "/vault/secrets", "/var/run/graft")})
		c.Env = append(c.Env, corev1.EnvVar{Name: g.pick("OTEL_SERVICE_NAME", "GRAFT_AGENT_ADDR", "OTEL_EXPORTER_OTLP_ENDPOINT", "GRAFT_POD_NAME"), Value: "mine"})
	}

	// Resources.
	switch {
	case g.is("container-resources", "restricted-large-resources"):
		g.resources(p, true, true)
	case g.is("pod-resources-requests"):
		g.resources(p, g.chance(0.7), g.chance(0.3))
		g.podResources(p, false, false)
	case g.is("pod-resources-limits"):
		g.resources(p, g.chance(0.7), g.chance(0.5))
		g.podResources(p, true, true)
	case g.is("windows-container-resources"):
		g.resources(p, true, g.chance(0.5))
	case g.is("pod-resources-no-container"):
		g.podResources(p, g.chance(0.5), g.chance(0.5))
	case g.is("limitrange"):
		out.LimitRange = true
	default:
		if g.chance(0.4) {
			g.resources(p, true, g.chance(0.5))
		}
		if g.chance(0.1) && !g.is("windows-os", "windows-node-selector", "windows-affinity") {
			g.podResources(p, g.chance(0.5), g.chance(0.5))
		}
	}
	if g.is("restricted-large-resources") {
		g.podResources(p, true, true)
	}
	// LimitRange namespaces for a third of the others; a Pod with
	// pod-level resources there sets every container's resources, which
	// LimitRanger would otherwise default beyond the Pod's figures.
	if !out.LimitRange && g.chance(0.3) {
		out.LimitRange = true
	}
	if out.LimitRange && p.Spec.Resources != nil {
		g.resources(p, true, true)
		g.podResources(p, p.Spec.Resources.Limits != nil, true)
	}

	// Operating system.
	switch g.trait {
	case "windows-os", "windows-container-resources":
		p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
	case "windows-node-selector":
		p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "windows"}
		if g.chance(0.5) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		}
	case "windows-affinity":
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"windows"}}},
			}}},
		}}
		if g.chance(0.5) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		}
	case "linux-explicit":
		p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
		p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	}

	// Security contexts.
	sec := secNone
	switch {
	case p.Spec.OS != nil && p.Spec.OS.Name == corev1.Windows:
		sec = secWindows
	case g.is("restricted-pod-level", "uid-1337"):
		sec = secRestrictedPod
	case g.is("restricted-container-level", "restricted-large-resources", "restricted-uid-1337-sidecar"):
		sec = secRestrictedContainers
	case g.is("baseline"):
		sec = secBaseline
	case g.is("privileged"):
		sec = secPrivileged
	case g.is("windows-node-selector", "windows-affinity"):
	default:
		sec = []security{secNone, secNone, secRestrictedPod, secRestrictedContainers, secBaseline}[g.r.IntN(5)]
	}
	g.secure(p, sec)
	if g.is("uid-1337", "restricted-uid-1337-sidecar") {
		uid := int64(1337)
		if p.Spec.SecurityContext == nil {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{}
		}
		p.Spec.SecurityContext.RunAsUser = &uid
	}

	// The rest.
	if g.is("host-network") && sec != secWindows {
		p.Spec.HostNetwork = true
	}
	switch {
	case g.is("automount-off"):
		p.Spec.AutomountServiceAccountToken = new(bool)
	case g.is("automount-on"):
		t := true
		p.Spec.AutomountServiceAccountToken = &t
	case g.chance(0.1):
		p.Spec.AutomountServiceAccountToken = new(bool)
	}
	if g.chance(0.2) {
		p.Annotations = map[string]string{"corpus.graft.dev/note": strings.Repeat("x", 1+g.r.IntN(64))}
	}
	return out
}

func (g *gen) container(name string) corev1.Container {
	c := corev1.Container{Name: name, Image: fmt.Sprintf("registry.example/%s:%d.%d", name, 1+g.r.IntN(3), g.r.IntN(10))}
	env := g.r.IntN(4)
	if g.is("large") {
		env = 40
	}
	for i := range env {
		c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("VAR_%d", i), Value: strings.Repeat("v", 1+g.r.IntN(32))})
	}
	if g.is("large") || g.chance(0.2) {
		c.Args = []string{"--config", strings.Repeat("k=v;", 20+g.r.IntN(200))}
	}
	return c
}

// Ports near graft's, and others.
var (
	graftPorts     = []int32{15021, 15000, 15001, 15006, 15090, 13133, 2020, 8200}
	otherPorts     = []int32{80, 443, 3000, 5000, 8080, 8443, 9090, 9443}
	graftPortNames = []string{"proxy-health", "otel-health", "shipper-http", "http-envoy-prom"}
	otherPortNames = []string{"http", "https", "metrics", "grpc", "admin", "web"}
)

// port draws a containerPort unique within the Pod, with a name half the
// time; false when the draw is taken.
func (g *gen) port() (corev1.ContainerPort, bool) {
	nums, portNames := otherPorts, otherPortNames
	if g.is("graft-ports") || g.chance(0.1) {
		nums = graftPorts
	}
	if g.is("graft-port-names") || g.chance(0.1) {
		portNames = graftPortNames
	}
	n := nums[g.r.IntN(len(nums))]
	if slices.Contains(g.ports, n) {
		return corev1.ContainerPort{}, false
	}
	g.ports = append(g.ports, n)
	p := corev1.ContainerPort{ContainerPort: n, Protocol: corev1.ProtocolTCP}
	if g.is("graft-port-names") || g.chance(0.5) {
		name := portNames[g.r.IntN(len(portNames))]
		if !slices.Contains(g.portNames, name) {
			g.portNames = append(g.portNames, name)
			p.Name = name
		}
	}
	return p, true
}

// resources gives every container requests (and limits).
func (g *gen) resources(p *corev1.Pod, requests, limits bool) {
	if !requests && !limits {
		return
	}
	set := func(c *corev1.Container) {
		cpu, mem := int64(10+g.r.IntN(50))*10, int64(16+g.r.IntN(32))*8 // m, Mi
		c.Resources = corev1.ResourceRequirements{}
		if requests {
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: milli(cpu), corev1.ResourceMemory: mebi(mem)}
		}
		if limits {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: milli(cpu * 2), corev1.ResourceMemory: mebi(mem * 2)}
		}
	}
	for i := range p.Spec.InitContainers {
		set(&p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		set(&p.Spec.Containers[i])
	}
}

// podResources sets spec.resources from the containers: requests equal to
// their aggregate (or above it, with slack), limits at least each
// container's and the requests.
func (g *gen) podResources(p *corev1.Pod, limits, slack bool) {
	// A container with limits and no requests gets requests equal to
	// its limits (API defaulting) before validation compares.
	req := aggregate(p, func(c *corev1.Container) corev1.ResourceList {
		out := corev1.ResourceList{}
		for name, q := range c.Resources.Limits {
			out[name] = q
		}
		for name, q := range c.Resources.Requests {
			out[name] = q
		}
		return out
	})
	cpu, mem := req[corev1.ResourceCPU], req[corev1.ResourceMemory]
	if cpu.IsZero() && mem.IsZero() || slack {
		addTo(req, corev1.ResourceCPU, milli(int64(100+g.r.IntN(400))))
		addTo(req, corev1.ResourceMemory, mebi(int64(64+g.r.IntN(448))))
	}
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: req}
	if !limits {
		return
	}
	lim := corev1.ResourceList{}
	for name, q := range req {
		l := q.DeepCopy()
		l.Add(q) // twice the requests
		for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
			if cl, ok := c.Resources.Limits[name]; ok && cl.Cmp(l) > 0 {
				l = cl.DeepCopy()
			}
		}
		lim[name] = l
	}
	p.Spec.Resources.Limits = lim
}

// aggregate is the Pod's effective request as validation computes it
// against spec.resources: the larger of the app containers and native
// sidecars together, and each init container with the sidecars started
// before it.
func aggregate(p *corev1.Pod, of func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			for name, q := range of(c) {
				addTo(sidecars, name, q)
			}
			continue
		}
		for name, q := range of(c) {
			v := q.DeepCopy()
			if s, ok := sidecars[name]; ok {
				v.Add(s)
			}
			if m, ok := initMax[name]; !ok || v.Cmp(m) > 0 {
				initMax[name] = v
			}
		}
	}
	for i := range p.Spec.Containers {
		for name, q := range of(&p.Spec.Containers[i]) {
			addTo(out, name, q)
		}
	}
	for name, q := range sidecars {
		addTo(out, name, q)
	}
	for name, q := range initMax {
		if o, ok := out[name]; !ok || q.Cmp(o) > 0 {
			out[name] = q
		}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := out[name]; !ok {
			out[name] = resource.Quantity{Format: resource.DecimalSI}
		}
	}
	return out
}

func addTo(l corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	v := l[name]
	v.Add(q)
	l[name] = v
}

func milli(v int64) resource.Quantity { return *resource.NewMilliQuantity(v, resource.DecimalSI) }

func mebi(v int64) resource.Quantity { return *resource.NewQuantity(v<<20, resource.BinarySI) }

// secure writes the security contexts sec asks for on every container.
func (g *gen) secure(p *corev1.Pod, sec security) {
	no, yes := false, true
	each := func(f func(*corev1.Container)) {
		for i := range p.Spec.InitContainers {
			f(&p.Spec.InitContainers[i])
		}
		for i := range p.Spec.Containers {
			f(&p.Spec.Containers[i])
		}
	}
	restrictedContainer := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	}
	switch sec {
	case secRestrictedPod:
		uid := int64(1000 + g.r.IntN(1000))
		p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		if g.chance(0.5) {
			fs := int64(2000)
			p.Spec.SecurityContext.FSGroup = &fs
		}
		each(func(c *corev1.Container) { c.SecurityContext = restrictedContainer() })
	case secRestrictedContainers:
		each(func(c *corev1.Container) {
			sc := restrictedContainer()
			sc.RunAsNonRoot = &yes
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
			if g.chance(0.3) {
				sc.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
			}
			if g.chance(0.5) {
				ro := true
				sc.ReadOnlyRootFilesystem = &ro
			}
			c.SecurityContext = sc
		})
	case secBaseline:
		root := int64(0)
		p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &root}
		each(func(c *corev1.Container) {
			if g.chance(0.5) {
				c.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE", "CHOWN"}}}
			}
		})
	case secPrivileged:
		// Not privileged: true, which kube-apiserver refuses unless run
		// with --allow-privileged; capabilities beyond baseline's.
		root := int64(0)
		c := &p.Spec.Containers[0]
		c.SecurityContext = &corev1.SecurityContext{RunAsUser: &root, Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}}}
	case secWindows:
		if g.chance(0.5) {
			user := "ContainerUser"
			p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{RunAsUserName: &user}}
		}
		if g.chance(0.5) {
			p.Spec.SecurityContext = cmpOrSC(p.Spec.SecurityContext)
			p.Spec.SecurityContext.RunAsNonRoot = &yes
		}
	}
}

func cmpOrSC(sc *corev1.PodSecurityContext) *corev1.PodSecurityContext {
	if sc == nil {
		return &corev1.PodSecurityContext{}
	}
	return sc
}
