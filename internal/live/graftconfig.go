package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// Install names the graft whose configuration the live commands judge
// Pods by.
type Install struct {
	// Namespace is graft's namespace; "" is graft-system, where deploy/
	// installs it.
	Namespace string
	// Deployment is graft's Deployment; "" is the one labelled
	// app.kubernetes.io/name=graft there (deploy/'s and the chart's).
	Deployment string
}

// GraftConfig is a configuration graft serve runs with: the file and its
// templates, and where they were read.
type GraftConfig struct {
	// Source says where the configuration was read, for the user.
	Source string
	File   config.File
	// TemplatesDir is graft serve's --templates-dir; "" leaves it to the
	// file's server.templatesDir.
	TemplatesDir string
	// Templates loads a templates directory (TemplatesDir, the file's, a
	// revision's) as graft serve would see it.
	Templates config.TemplatesLoader
}

// GraftConfig reads the configuration graft runs with in the cluster:
// the ConfigMaps its Deployment mounts where graft serve's --config and
// --templates-dir point. Without a graft Deployment to find (none
// labelled as deploy/ labels it, and none named), it is the built-in
// configuration, and Source says why.
func (cl *Cluster) GraftConfig(ctx context.Context, in Install) (*GraftConfig, error) {
	ns := cmp.Or(in.Namespace, names.SystemNamespace)
	var dep *appsv1.Deployment
	if in.Deployment != "" {
		d, err := cl.client.AppsV1().Deployments(ns).Get(ctx, in.Deployment, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("graft's Deployment %s/%s: %w", ns, in.Deployment, err)
		}
		dep = d
	} else {
		sel := names.AppNameLabel + "=" + names.AppName
		l, err := cl.client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, fmt.Errorf("finding graft's Deployment (%s in namespace %s): %w", sel, ns, err)
		}
		switch len(l.Items) {
		case 0:
			return &GraftConfig{
				Source:    fmt.Sprintf("built-in: no Deployment labelled %s in namespace %s", sel, ns),
				File:      config.Default(),
				Templates: config.Templates,
			}, nil
		case 1:
			dep = &l.Items[0]
		default:
			found := make([]string, len(l.Items))
			for i := range l.Items {
				found[i] = l.Items[i].Name
			}
			slices.Sort(found)
			return nil, fmt.Errorf("%d Deployments labelled %s in namespace %s (%s): name graft's", len(found), sel, ns, strings.Join(found, ", "))
		}
	}
	return readMounted(ctx, cl.client, dep)
}

// readMounted reads the configuration dep's graft serve container is
// given, from the ConfigMaps mounted where its flags point.
func readMounted(ctx context.Context, c kubernetes.Interface, dep *appsv1.Deployment) (*GraftConfig, error) {
	what := "Deployment " + dep.Namespace + "/" + dep.Name
	ctr, flags, ok := serveContainer(dep.Spec.Template.Spec.Containers)
	if !ok {
		return nil, fmt.Errorf("%s runs no graft serve container", what)
	}
	m := readConfigMaps(ctx, c, dep.Namespace, ctr, dep.Spec.Template.Spec.Volumes)
	out := &GraftConfig{TemplatesDir: flags[names.FlagTemplatesDir], Templates: m.templates}
	var templatesFrom string
	if out.TemplatesDir != "" {
		_, from, err := m.files(out.TemplatesDir)
		if err != nil {
			return nil, fmt.Errorf("%s: --%s %s: %w", what, names.FlagTemplatesDir, out.TemplatesDir, err)
		}
		templatesFrom = " with the templates of " + from
	}
	configPath := flags[names.FlagConfig]
	if configPath == "" {
		out.Source = fmt.Sprintf("built-in%s, as %s runs graft serve without --%s", templatesFrom, what, names.FlagConfig)
		out.File = config.Default()
		return out, nil
	}
	data, from, err := m.file(configPath)
	if err != nil {
		return nil, fmt.Errorf("%s: --%s %s: %w", what, names.FlagConfig, configPath, err)
	}
	if len(data) > config.MaxFileBytes {
		return nil, fmt.Errorf("%s: over %d bytes", from, config.MaxFileBytes)
	}
	if out.File, err = config.Parse(from, data); err != nil {
		return nil, err
	}
	out.Source = fmt.Sprintf("%s%s, mounted by %s", from, templatesFrom, what)
	return out, nil
}

// serveContainer finds the container running graft serve and its flags
// (--name=value and --name value alike), or false.
func serveContainer(cs []corev1.Container) (*corev1.Container, map[string]string, bool) {
	for i := range cs {
		words := append(slices.Clone(cs[i].Command), cs[i].Args...)
		at := slices.Index(words, "serve")
		if at < 0 {
			continue
		}
		flags := map[string]string{}
		rest := words[at+1:]
		for j := 0; j < len(rest); j++ {
			name, ok := strings.CutPrefix(rest[j], "--")
			if !ok {
				continue
			}
			if k, v, hasValue := strings.Cut(name, "="); hasValue {
				flags[k] = v
			} else if j+1 < len(rest) && !strings.HasPrefix(rest[j+1], "-") {
				flags[name] = rest[j+1]
				j++
			}
		}
		return &cs[i], flags, true
	}
	return nil, nil, false
}

// mounted reads files of graft's container from the ConfigMaps mounted
// there.
type mounted struct {
	namespace string
	container *corev1.Container
	volumes   []corev1.Volume
	// configMaps are the ConfigMaps of the container's ConfigMap volumes
	// by name, or why one could not be read (said when it is needed).
	configMaps map[string]*corev1.ConfigMap
	errs       map[string]error
}

// readConfigMaps GETs the ConfigMap of each ConfigMap volume ctr mounts,
// once each, up front: the template loader that reads them later is
// called without a context.
func readConfigMaps(ctx context.Context, c kubernetes.Interface, ns string, ctr *corev1.Container, volumes []corev1.Volume) *mounted {
	m := &mounted{namespace: ns, container: ctr, volumes: volumes,
		configMaps: map[string]*corev1.ConfigMap{}, errs: map[string]error{}}
	for _, vm := range ctr.VolumeMounts {
		i := slices.IndexFunc(volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
		if i < 0 || volumes[i].ConfigMap == nil {
			continue
		}
		name := volumes[i].ConfigMap.Name
		if _, done := m.configMaps[name]; done || m.errs[name] != nil {
			continue
		}
		cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			m.errs[name] = fmt.Errorf("ConfigMap %s/%s: %w", ns, name, err)
			continue
		}
		m.configMaps[name] = cm
	}
	return m
}

// ErrNotConfigMap is a path graft's container reads from a volume that is
// not a ConfigMap (an emptyDir, the image's own files, ...): nothing the
// API server holds.
var ErrNotConfigMap = errors.New("not mounted from a ConfigMap")

// cmFile is one file of a ConfigMap volume: the key it shows.
type cmFile struct {
	key  string
	data []byte
}

// files are the files of the ConfigMap volume mounted over p, by their
// paths below p ("." for p itself), and what errors call the ConfigMap.
func (m *mounted) files(p string) (map[string]cmFile, string, error) {
	p = path.Clean(p)
	var mount *corev1.VolumeMount
	for i := range m.container.VolumeMounts {
		vm := &m.container.VolumeMounts[i]
		mp := path.Clean(vm.MountPath)
		if (p == mp || strings.HasPrefix(p, mp+"/") || mp == "/") && (mount == nil || len(mp) > len(path.Clean(mount.MountPath))) {
			mount = vm
		}
	}
	if mount == nil {
		return nil, "", fmt.Errorf("%s: %w (no volume is mounted there)", p, ErrNotConfigMap)
	}
	i := slices.IndexFunc(m.volumes, func(v corev1.Volume) bool { return v.Name == mount.Name })
	if i < 0 || m.volumes[i].ConfigMap == nil {
		return nil, "", fmt.Errorf("%s: %w (volume %s)", p, ErrNotConfigMap, mount.Name)
	}
	src := m.volumes[i].ConfigMap
	cm, ok := m.configMaps[src.Name]
	if !ok {
		return nil, "", m.errs[src.Name]
	}
	// The volume's files by their paths in the volume: every key, or
	// the items' paths.
	inVolume := map[string]cmFile{}
	value := func(k string) (cmFile, bool) {
		if v, ok := cm.Data[k]; ok {
			return cmFile{k, []byte(v)}, true
		}
		v, ok := cm.BinaryData[k]
		return cmFile{k, v}, ok
	}
	if len(src.Items) == 0 {
		for k := range cm.Data {
			inVolume[k], _ = value(k)
		}
		for k := range cm.BinaryData {
			inVolume[k], _ = value(k)
		}
	}
	for _, it := range src.Items {
		if v, ok := value(it.Key); ok {
			inVolume[path.Clean(it.Path)] = v
		}
	}
	// What the mount shows at mountPath is the volume below subPath; p is
	// below mountPath.
	below := strings.TrimPrefix(strings.TrimPrefix(p, path.Clean(mount.MountPath)), "/")
	root := path.Clean(path.Join(mount.SubPath, below))
	out := map[string]cmFile{}
	for f, data := range inVolume {
		switch {
		case root == ".":
			out[f] = data
		case f == root:
			out["."] = data
		case strings.HasPrefix(f, root+"/"):
			out[strings.TrimPrefix(f, root+"/")] = data
		}
	}
	return out, "ConfigMap " + m.namespace + "/" + cm.Name, nil
}

// file is the contents of the file at p, and what errors call it.
func (m *mounted) file(p string) ([]byte, string, error) {
	all, from, err := m.files(p)
	if err != nil {
		return nil, "", err
	}
	f, ok := all["."]
	if !ok {
		return nil, "", fmt.Errorf("%s has no key for %s", from, p)
	}
	return f.data, from + " key " + f.key, nil
}

// templates is config.Templates for a directory of graft's container:
// the built-in set overlaid by the templates of the ConfigMap mounted
// there (its files directly in the directory).
func (m *mounted) templates(dir string) (*templates.Set, error) {
	if dir == "" {
		return config.Templates("")
	}
	all, from, err := m.files(dir)
	if err != nil {
		return nil, fmt.Errorf("templates dir %s: %w", dir, err)
	}
	top := filesFS{}
	for name, f := range all {
		if name != "." && !strings.Contains(name, "/") {
			top[name] = f.data
		}
	}
	return config.TemplatesFS(top, from)
}
