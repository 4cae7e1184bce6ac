package templates

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/graftdev/graft/internal/imageref"
	"github.com/graftdev/graft/internal/names"
)

// checkFragment checks a rendered fragment against the Kubernetes rules a
// Pod holding it must meet; Render applies it to every fragment, so lint,
// `graft render` and the engine share it. Parsing already proved each
// element decodes into its Kubernetes type (quantities included); these
// are the rules the API server checks on top. Each problem names the
// element it is about.
func checkFragment(f *Fragment) []string {
	var out []string
	add := func(where string, errs ...string) {
		for _, e := range errs {
			out = append(out, where+": "+e)
		}
	}

	volumes := map[string]bool{}
	for _, el := range f.Volumes {
		where := fmt.Sprintf("volumes[%s]", el.Name)
		add(where, validation.IsDNS1123Label(el.Name)...)
		add(where, checkVolume(el.Raw)...)
		volumes[el.Name] = true
	}
	lists := []struct {
		what    string
		els     []Element
		sidecar bool
	}{{"initContainers", f.InitContainers, true}, {"containers", f.Containers, false}}
	ports := map[string]string{}
	// Parsing rejects a name twice in one list; a Pod's container names
	// are unique across both lists.
	containers := map[string]string{}
	for _, l := range lists {
		for _, el := range l.els {
			where := fmt.Sprintf("%s[%s]", l.what, el.Name)
			if other, dup := containers[el.Name]; dup {
				add(where, "name: also used by "+other)
			}
			containers[el.Name] = where
			var c corev1.Container
			if err := json.Unmarshal(el.Raw, &c); err != nil {
				add(where, err.Error())
				continue
			}
			add(where, checkContainer(&c, l.sidecar, volumes)...)
			for _, p := range c.Ports {
				key := fmt.Sprintf("%s/%d", protocolOf(p.Protocol), p.ContainerPort)
				if other, dup := ports[key]; dup {
					add(where, fmt.Sprintf("port %s is also opened by %s", key, other))
				}
				ports[key] = el.Name
			}
		}
	}
	for _, el := range f.AppEnv {
		var e corev1.EnvVar
		if err := json.Unmarshal(el.Raw, &e); err != nil {
			add("appContainers.env", err.Error())
			continue
		}
		add(fmt.Sprintf("appContainers.env[%s]", el.Name), checkEnv(&e)...)
	}
	for _, el := range f.AppVolumeMounts {
		var m corev1.VolumeMount
		if err := json.Unmarshal(el.Raw, &m); err != nil {
			add("appContainers.volumeMounts", err.Error())
			continue
		}
		add(fmt.Sprintf("appContainers.volumeMounts[%s]", el.Name), checkMount(&m, volumes)...)
	}
	for _, el := range f.ImagePullSecrets {
		add(fmt.Sprintf("imagePullSecrets[%s]", el.Name), validation.IsDNS1123Subdomain(el.Name)...)
	}
	for _, kv := range f.Annotations {
		add(fmt.Sprintf("annotations[%s]", kv.Key), checkMetaKey(kv.Key)...)
	}
	for _, kv := range f.Labels {
		where := fmt.Sprintf("labels[%s]", kv.Key)
		add(where, checkMetaKey(kv.Key)...)
		add(where, validation.IsValidLabelValue(kv.Value)...)
	}
	return out
}

func checkContainer(c *corev1.Container, sidecar bool, volumes map[string]bool) []string {
	var out []string
	add := func(where string, errs ...string) {
		for _, e := range errs {
			if where != "" {
				e = where + ": " + e
			}
			out = append(out, e)
		}
	}
	add("name", validation.IsDNS1123Label(c.Name)...)
	if strings.TrimSpace(c.Image) == "" {
		add("image", "is required")
	} else if err := imageref.Check(c.Image); err != nil {
		// Whatever wrote it, template text or a parameter of any format:
		// no container graft injects runs an image a runtime would parse
		// differently, or that allowedImages could misjudge.
		add("image", fmt.Sprintf("%q is not a container image reference: %v", c.Image, err))
	}
	if !sidecar && c.RestartPolicy != nil {
		add("restartPolicy", "may only be set on init containers")
	}
	portNames := map[string]bool{}
	for i, p := range c.Ports {
		where := fmt.Sprintf("ports[%d]", i)
		add(where+".containerPort", validation.IsValidPortNum(int(p.ContainerPort))...)
		if p.HostPort != 0 {
			add(where+".hostPort", validation.IsValidPortNum(int(p.HostPort))...)
		}
		if p.Name != "" {
			add(where+".name", validation.IsValidPortName(p.Name)...)
			if portNames[p.Name] {
				add(where+".name", fmt.Sprintf("duplicate port name %q", p.Name))
			}
			portNames[p.Name] = true
		}
		switch p.Protocol {
		case "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			add(where+".protocol", fmt.Sprintf("%q: want TCP, UDP or SCTP", p.Protocol))
		}
	}
	envNames := map[string]bool{}
	for _, e := range c.Env {
		where := fmt.Sprintf("env[%s]", e.Name)
		add(where, checkEnv(&e)...)
		if envNames[e.Name] {
			add(where, "duplicate env var")
		}
		envNames[e.Name] = true
	}
	add("resources", checkResources(c.Resources)...)
	mountPaths := map[string]bool{}
	for _, m := range c.VolumeMounts {
		where := fmt.Sprintf("volumeMounts[%s]", m.Name)
		add(where, checkMount(&m, volumes)...)
		if mountPaths[m.MountPath] {
			add(where, fmt.Sprintf("mountPath %q is mounted twice", m.MountPath))
		}
		mountPaths[m.MountPath] = true
	}
	probes := []struct {
		what string
		p    *corev1.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}}
	for _, pr := range probes {
		if pr.p != nil {
			add(pr.what, checkProbe(pr.p, portNames)...)
		}
	}
	return out
}

func checkEnv(e *corev1.EnvVar) []string {
	out := validation.IsEnvVarName(e.Name)
	if e.Value != "" && e.ValueFrom != nil {
		out = append(out, "value and valueFrom are exclusive")
	}
	if vf := e.ValueFrom; vf != nil {
		n := 0
		for _, set := range []bool{vf.FieldRef != nil, vf.ResourceFieldRef != nil, vf.ConfigMapKeyRef != nil, vf.SecretKeyRef != nil, vf.FileKeyRef != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			out = append(out, "valueFrom needs exactly one source")
		}
	}
	return out
}

func checkMount(m *corev1.VolumeMount, volumes map[string]bool) []string {
	var out []string
	if !volumes[m.Name] {
		out = append(out, "mounts a volume the template does not define")
	}
	if !path.IsAbs(m.MountPath) {
		out = append(out, fmt.Sprintf("mountPath %q must be absolute", m.MountPath))
	} else if strings.Contains(m.MountPath, ":") {
		out = append(out, fmt.Sprintf("mountPath %q must not contain ':'", m.MountPath))
	}
	if hasDotDot(m.MountPath) {
		// The kubelet would mount where the path leads once cleaned:
		// anywhere in the container, over the ServiceAccount token too.
		out = append(out, fmt.Sprintf("mountPath %q must not contain '..'", m.MountPath))
	}
	if m.SubPath != "" && (hasDotDot(m.SubPath) || path.IsAbs(m.SubPath)) {
		out = append(out, fmt.Sprintf("subPath %q must be a relative path without '..'", m.SubPath))
	}
	return out
}

// hasDotDot reports whether a slash-separated path has a ".." element.
func hasDotDot(p string) bool {
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return true
		}
	}
	return false
}

// checkResources checks resource names, that quantities are not negative,
// and that no request exceeds its limit.
func checkResources(r corev1.ResourceRequirements) []string {
	var out []string
	for _, list := range []struct {
		what string
		rl   corev1.ResourceList
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		for _, name := range slices.Sorted(maps.Keys(list.rl)) {
			where := fmt.Sprintf("%s[%s]", list.what, name)
			if !isResourceName(string(name)) {
				out = append(out, where+": not a resource name")
			}
			if q := list.rl[name]; q.Sign() < 0 {
				out = append(out, where+": must not be negative")
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		lim, ok := r.Limits[name]
		if req := r.Requests[name]; ok && req.Cmp(lim) > 0 {
			out = append(out, fmt.Sprintf("requests[%s] %s exceeds its limit %s", name, req.String(), lim.String()))
		}
	}
	return out
}

func isResourceName(n string) bool {
	switch {
	case n == "cpu", n == "memory", n == "ephemeral-storage", strings.HasPrefix(n, "hugepages-"):
		return true
	case strings.Contains(n, "/"):
		return len(validation.IsQualifiedName(n)) == 0
	}
	return false
}

func checkProbe(p *corev1.Probe, portNames map[string]bool) []string {
	var out []string
	port := func(where string, v intstr.IntOrString) {
		if v.Type == intstr.String {
			if !portNames[v.StrVal] {
				out = append(out, fmt.Sprintf("%s: names port %q the container does not declare", where, v.StrVal))
			}
			return
		}
		for _, e := range validation.IsValidPortNum(v.IntValue()) {
			out = append(out, where+": "+e)
		}
	}
	n := 0
	if h := p.HTTPGet; h != nil {
		n++
		port("httpGet.port", h.Port)
	}
	if t := p.TCPSocket; t != nil {
		n++
		port("tcpSocket.port", t.Port)
	}
	if g := p.GRPC; g != nil {
		n++
		port("grpc.port", intstr.FromInt32(g.Port))
	}
	if e := p.Exec; e != nil {
		n++
		if len(e.Command) == 0 {
			out = append(out, "exec.command is empty")
		}
	}
	if n != 1 {
		out = append(out, "needs exactly one handler")
	}
	return out
}

// checkVolume requires exactly one volume source besides the name.
func checkVolume(raw []byte) []string {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return []string{err.Error()}
	}
	delete(fields, "name")
	if len(fields) != 1 {
		return []string{fmt.Sprintf("needs exactly one volume source, has %d", len(fields))}
	}
	var v corev1.Volume
	if err := json.Unmarshal(raw, &v); err != nil {
		return []string{err.Error()}
	}
	if ed := v.EmptyDir; ed != nil && ed.SizeLimit != nil && ed.SizeLimit.Sign() <= 0 {
		return []string{"emptyDir.sizeLimit must be positive"}
	}
	return nil
}

// checkMetaKey checks an annotation or label key. graft.dev/ keys are
// graft's own: parameters and status.
func checkMetaKey(k string) []string {
	out := validation.IsQualifiedName(k)
	if strings.HasPrefix(k, names.Prefix) {
		out = append(out, "keys under "+names.Prefix+" are reserved for graft")
	}
	return out
}

func protocolOf(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// injectedNames are the names f claims in a Pod, each prefixed by its kind,
// for the check that templates combine.
func injectedNames(f *Fragment) []string {
	var out []string
	for _, el := range slices.Concat(f.InitContainers, f.Containers) {
		out = append(out, fmt.Sprintf("container %q", el.Name))
		var c corev1.Container
		if json.Unmarshal(el.Raw, &c) == nil {
			for _, p := range c.Ports {
				out = append(out, fmt.Sprintf("port %s/%d", protocolOf(p.Protocol), p.ContainerPort))
			}
		}
	}
	for _, el := range f.Volumes {
		out = append(out, fmt.Sprintf("volume %q", el.Name))
	}
	for _, el := range f.AppEnv {
		out = append(out, fmt.Sprintf("app env var %s", el.Name))
	}
	for _, el := range f.AppVolumeMounts {
		out = append(out, fmt.Sprintf("app mount path %s", el.MountPath))
	}
	for _, kv := range f.Annotations {
		out = append(out, fmt.Sprintf("annotation %s", kv.Key))
	}
	for _, kv := range f.Labels {
		out = append(out, fmt.Sprintf("label %s", kv.Key))
	}
	return out
}
