package export

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// What kube-apiserver defaults in the fields the guarantee compares, so
// that the policy compares graft's render as the API server stores it
// (validating policies see the defaulted object). Mirrored from
// k8s.io/kubernetes pkg/apis/core/v1 (defaults.go and
// zz_generated.defaults.go, SetObjectDefaults_Pod) at v1.37.2; the e2e
// suite holds the mirror to the API server (TestGuaranteeDefaultsAsTheAPIServer).
// terminationMessagePath/Policy and imagePullPolicy are defaulted too,
// but not compared.

func defaultContainer(c *corev1.Container) {
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil {
			if vf.FieldRef != nil {
				defaultFieldRef(vf.FieldRef)
			}
			if vf.FileKeyRef != nil && vf.FileKeyRef.Optional == nil {
				f := false
				vf.FileKeyRef.Optional = &f
			}
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		if p.TimeoutSeconds == 0 {
			p.TimeoutSeconds = 1
		}
		if p.PeriodSeconds == 0 {
			p.PeriodSeconds = 10
		}
		if p.SuccessThreshold == 0 {
			p.SuccessThreshold = 1
		}
		if p.FailureThreshold == 0 {
			p.FailureThreshold = 3
		}
		if p.HTTPGet != nil {
			defaultHTTPGet(p.HTTPGet)
		}
		if p.GRPC != nil && p.GRPC.Service == nil {
			s := ""
			p.GRPC.Service = &s
		}
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil && h.HTTPGet != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultFieldRef(f *corev1.ObjectFieldSelector) {
	if f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

func defaultVolume(v *corev1.Volume) {
	s := &v.VolumeSource
	if *s == (corev1.VolumeSource{}) {
		s.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	mode := func(m **int32, def int32) {
		if *m == nil {
			*m = &def
		}
	}
	if s.HostPath != nil && s.HostPath.Type == nil {
		t := corev1.HostPathUnset
		s.HostPath.Type = &t
	}
	if s.Secret != nil {
		mode(&s.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	}
	if s.ConfigMap != nil {
		mode(&s.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if s.DownwardAPI != nil {
		mode(&s.DownwardAPI.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
		for i := range s.DownwardAPI.Items {
			if f := s.DownwardAPI.Items[i].FieldRef; f != nil {
				defaultFieldRef(f)
			}
		}
	}
	if s.Projected != nil {
		mode(&s.Projected.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
		for i := range s.Projected.Sources {
			src := &s.Projected.Sources[i]
			if src.DownwardAPI != nil {
				for j := range src.DownwardAPI.Items {
					if f := src.DownwardAPI.Items[j].FieldRef; f != nil {
						defaultFieldRef(f)
					}
				}
			}
			if src.ServiceAccountToken != nil && src.ServiceAccountToken.ExpirationSeconds == nil {
				hour := int64(3600)
				src.ServiceAccountToken.ExpirationSeconds = &hour
			}
		}
	}
}

// APIDefaults applies to pod what kube-apiserver defaults in its
// containers and volumes (defaultContainer and defaultVolume, and the
// fields it defaults that the guarantee does not compare): for tests that
// hand the policies a Pod as the API server would store it.
func APIDefaults(pod *corev1.Pod) {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			defaultContainer(c)
			if c.ImagePullPolicy == "" {
				c.ImagePullPolicy = pullPolicy(c.Image)
			}
			c.TerminationMessagePath = cmpOr(c.TerminationMessagePath, corev1.TerminationMessagePathDefault)
			c.TerminationMessagePolicy = cmpOr(c.TerminationMessagePolicy, corev1.TerminationMessageReadFile)
			if pod.Spec.HostNetwork { // SetDefaults_Pod: defaultHostNetworkPorts
				for j := range c.Ports {
					if c.Ports[j].HostPort == 0 {
						c.Ports[j].HostPort = c.Ports[j].ContainerPort
					}
				}
			}
		}
	}
	for i := range pod.Spec.Volumes {
		defaultVolume(&pod.Spec.Volumes[i])
	}
}

// pullPolicy is the imagePullPolicy the API server defaults for image:
// Always for the tag latest or none, else IfNotPresent (SetDefaults_Container,
// parsers.ParseImageName: a digest wins over a tag).
func pullPolicy(image string) corev1.PullPolicy {
	name := image
	if i := strings.LastIndexByte(name, '@'); i >= 0 {
		return corev1.PullIfNotPresent
	}
	tag := ""
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		tag = name[i+1:]
	}
	if tag == "" || tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}
