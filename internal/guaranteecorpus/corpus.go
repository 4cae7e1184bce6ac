// Package guaranteecorpus generates Pods and edits to graft's containers
// for the property tests that hold graft's two judges of "graft's
// container" to the one definition (GUARANTEE-SPEC, docs/concepts/guarantee.md):
// the guarantee policy (internal/registration, through internal/vapeval)
// and the webhook (inject). Each edit says whether the definition still
// calls the container graft's after it: an allowed difference (API-server
// defaults, the ServiceAccount plugin's token mount, the fields not
// compared) keeps it graft's; any change to a compared field does not.
// A test draws Pods, lets graft inject them, stores them as the API
// server would (Store), applies edits and asks each judge.
package guaranteecorpus

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/export"
)

// Pod draws an application Pod: one to three app containers (some with
// env, ports or mounts of their own), maybe an init container, volumes,
// labels and annotations, none of them graft's.
func Pod(r *rand.Rand) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", r.IntN(1000)),
		Labels: map[string]string{"app": "web"}}}
	if r.IntN(2) == 0 {
		p.Annotations = map[string]string{"team.example/owner": "shop"}
	}
	for i := range 1 + r.IntN(3) {
		c := corev1.Container{Name: fmt.Sprintf("app%d", i), Image: fmt.Sprintf("registry.example/app%d:1", i)}
		if r.IntN(2) == 0 {
			c.Env = []corev1.EnvVar{{Name: "MODE", Value: "prod"}}
		}
		if r.IntN(2) == 0 {
			c.Ports = []corev1.ContainerPort{{Name: fmt.Sprintf("http%d", i), ContainerPort: int32(8080 + i)}}
		}
		if r.IntN(3) == 0 {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			if !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "data" }) {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			}
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	if r.IntN(3) == 0 {
		p.Spec.InitContainers = []corev1.Container{{Name: "migrate", Image: "registry.example/migrate:1"}}
	}
	return p
}

// ServiceAccountVolume is the name Store gives the ServiceAccount
// plugin's token volume.
const ServiceAccountVolume = "kube-api-access-x7k2p"

// Store does to an admitted Pod what kube-apiserver does before its
// validating policies see it: the ServiceAccount plugin's token volume,
// mounted into every container without a mount at the token path (with
// serviceAccount), and the defaults of the fields the guarantee compares.
func Store(pod *corev1.Pod, serviceAccount bool) *corev1.Pod {
	p := pod.DeepCopy()
	if serviceAccount {
		vol := ""
		for _, v := range p.Spec.Volumes {
			if strings.HasPrefix(v.Name, "kube-api-access-") {
				vol = v.Name
				break
			}
		}
		if vol == "" {
			vol = ServiceAccountVolume
			p.Spec.Volumes = append(p.Spec.Volumes, TokenVolume(vol))
		}
		mount := func(cs []corev1.Container) {
			for i := range cs {
				if !slices.ContainsFunc(cs[i].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == tokenPath }) {
					cs[i].VolumeMounts = append(cs[i].VolumeMounts, corev1.VolumeMount{Name: vol, ReadOnly: true, MountPath: tokenPath})
				}
			}
		}
		mount(p.Spec.InitContainers)
		mount(p.Spec.Containers)
	}
	export.APIDefaults(p)
	return p
}

const tokenPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// TokenVolume is the ServiceAccount admission plugin's token volume
// (k8s.io/kubernetes plugin/pkg/admission/serviceaccount: TokenVolumeSource).
func TokenVolume(name string) corev1.Volume {
	exp := int64(3607)
	mode := int32(0o644)
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

// Edit is one change to a container of graft's in a stored Pod.
type Edit struct {
	Name string
	// Field is the compared field it changes, "" for an allowed
	// difference: the container stays graft's.
	Field string
	// Apply changes container c of pod (c points into pod).
	Apply func(pod *corev1.Pod, c *corev1.Container)
}

// Graft reports whether the container is still graft's after the edit.
func (e Edit) Graft() bool { return e.Field == "" }

// Edits lists every edit the corpus knows, the allowed differences first.
func Edits() []Edit {
	i64 := func(v int64) *int64 { return &v }
	sc := func(c *corev1.Container) *corev1.SecurityContext {
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		return c.SecurityContext
	}
	probe := func(c *corev1.Container) *corev1.Probe {
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.StartupProbe, c.LivenessProbe} {
			if p != nil {
				return p
			}
		}
		c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		return c.LivenessProbe
	}
	return []Edit{
		// Allowed: what LimitRanger, in-place resize and VPA change, and
		// fields that carry no privilege.
		{Name: "resources changed", Apply: func(_ *corev1.Pod, c *corev1.Container) {
			c.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7m")}}
		}},
		{Name: "imagePullPolicy Always", Apply: func(_ *corev1.Pod, c *corev1.Container) { c.ImagePullPolicy = corev1.PullAlways }},
		{Name: "terminationMessagePath", Apply: func(_ *corev1.Pod, c *corev1.Container) {
			c.TerminationMessagePath = "/tmp/term"
			c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
		}},
		{Name: "tty and stdin", Apply: func(_ *corev1.Pod, c *corev1.Container) { c.TTY, c.Stdin = true, true }},
		{Name: "resizePolicy", Apply: func(_ *corev1.Pod, c *corev1.Container) {
			c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
		}},
		// Not allowed: every compared field.
		{Name: "another image", Field: "image", Apply: func(_ *corev1.Pod, c *corev1.Container) { c.Image = "registry.example/evil:1" }},
		{Name: "a command of its own", Field: "command", Apply: func(_ *corev1.Pod, c *corev1.Container) { c.Command = []string{"/bin/sh", "-c", "id"} }},
		{Name: "an argument more", Field: "args", Apply: func(_ *corev1.Pod, c *corev1.Container) { c.Args = append(c.Args, "--debug") }},
		{Name: "a working directory", Field: "workingDir", Apply: func(_ *corev1.Pod, c *corev1.Container) { c.WorkingDir = "/" }},
		{Name: "an env var more", Field: "env", Apply: func(_ *corev1.Pod, c *corev1.Container) {
			c.Env = append(c.Env, corev1.EnvVar{Name: "LD_PRELOAD", Value: "/tmp/x.so"})
		}},
		{Name: "envFrom a Secret", Field: "envFrom", Apply: func(_ *corev1.Pod, c *corev1.Container) {
			c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}
		}},
		{Name: "a port more", Field: "ports", Apply: func(_ *corev1.Pod, c *corev1.Container) {
			c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 22, Protocol: corev1.ProtocolTCP})
		}},
		{Name: "a hostPath mount", Field: "volumeMounts", Apply: func(p *corev1.Pod, c *corev1.Container) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: new(corev1.HostPathUnset)}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "host", MountPath: "/host"})
		}},
		{Name: "a device", Field: "volumeDevices", Apply: func(_ *corev1.Pod, c *corev1.Container) {
			c.VolumeDevices = []corev1.VolumeDevice{{Name: "dev", DevicePath: "/dev/x"}}
		}},
		{Name: "runs as root", Field: "securityContext", Apply: func(_ *corev1.Pod, c *corev1.Container) { sc(c).RunAsUser = i64(0) }},
		{Name: "NET_ADMIN", Field: "securityContext", Apply: func(_ *corev1.Pod, c *corev1.Container) {
			s := sc(c)
			if s.Capabilities == nil {
				s.Capabilities = &corev1.Capabilities{}
			}
			s.Capabilities.Add = append(s.Capabilities.Add, "NET_ADMIN")
		}},
		{Name: "privileged", Field: "securityContext", Apply: func(_ *corev1.Pod, c *corev1.Container) { sc(c).Privileged = new(true) }},
		{Name: "restartPolicy changed", Field: "restartPolicy", Apply: func(_ *corev1.Pod, c *corev1.Container) {
			if c.RestartPolicy != nil {
				c.RestartPolicy = nil
			} else {
				c.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
			}
		}},
		{Name: "a probe's period", Field: "probe", Apply: func(_ *corev1.Pod, c *corev1.Container) { probe(c).PeriodSeconds += 7 }},
		{Name: "a probe's timeout", Field: "probe", Apply: func(_ *corev1.Pod, c *corev1.Container) { probe(c).TimeoutSeconds += 3 }},
		{Name: "a preStop hook", Field: "lifecycle", Apply: func(_ *corev1.Pod, c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"curl", "evil"}}}}
		}},
	}
}

// Random draws an edit.
func Random(r *rand.Rand) Edit {
	es := Edits()
	return es[r.IntN(len(es))]
}

// Judge says whether the container called name in a stored Pod of profile,
// in a namespace labelled graft.dev/rev=rev ("" for none), is graft's, and
// if not, why. The guarantee policy is one judge; the webhook is the
// other. A property test holds each to Edit.Graft.
type Judge interface {
	Graft(pod *corev1.Pod, profile, rev, name string) (graft bool, why string, err error)
}
