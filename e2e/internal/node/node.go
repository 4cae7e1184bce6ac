// Package node runs real Kubernetes nodes for the end-to-end harness: a
// kubelet built from the same module as the harness's kube-apiserver,
// Debian's containerd and runc, and the CNI reference plugins (a bridge
// with host-local addresses) followed by graft's own (graft-cni, when
// Options.Graft is set), each node with its own containerd in a
// scratch directory and its own bridge, whose address is the node's: the
// API server reaches the kubelet there (kubectl logs and exec), and the
// Pods reach the node.
//
// Everything a node makes is undone by Stop, by process id and by name:
// the kubelet, the Pod sandboxes (through containerd's CRI, which kills
// their containers and tears their network down), containerd, the mounts
// under the node's directory, and the bridge.
//
// It needs root, overlayfs, and the tools `make node-tools` installs;
// Check says what is missing.
package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/graftdev/graft/internal/proc"
)

// Tools are the programs a node runs, where Check found them.
type Tools struct {
	Containerd, Ctr, Runc, Shim string
	// CNIBin is the directory of the CNI plugins.
	CNIBin  string
	Kubelet string
}

// cniPlugins are the CNI plugins a node's network uses (containerd adds
// loopback itself).
var cniPlugins = []string{"bridge", "host-local", "portmap", "loopback"}

// Check reports whether real nodes can run here, with kubelet the path
// of the kubelet binary: as root, with overlayfs, the memory cgroup, and
// containerd, ctr, runc, the runc shim and the CNI plugins installed (by
// `make node-tools`). Its error says what is missing and how to get it.
func Check(kubelet string) (Tools, error) {
	var t Tools
	var errs []error
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("not root: containers need root here"))
	}
	if fs, err := os.ReadFile("/proc/filesystems"); err != nil || !strings.Contains(string(fs), "\toverlay\n") {
		errs = append(errs, errors.New("no overlay filesystem in /proc/filesystems (containerd's overlayfs snapshotter needs it)"))
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		if _, err2 := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err2 != nil {
			errs = append(errs, errors.New("no memory cgroup under /sys/fs/cgroup"))
		}
	}
	var missing []string
	look := func(name string, dst *string) {
		p, err := exec.LookPath(name)
		if err != nil {
			for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin"} {
				if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
					p, err = filepath.Join(dir, name), nil
					break
				}
			}
		}
		if p == "" {
			missing = append(missing, name)
		}
		*dst = p
	}
	look("containerd", &t.Containerd)
	look("ctr", &t.Ctr)
	look("runc", &t.Runc)
	look("containerd-shim-runc-v2", &t.Shim)
	for _, dir := range []string{"/usr/lib/cni", "/opt/cni/bin"} {
		ok := true
		for _, p := range cniPlugins {
			if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
				ok = false
			}
		}
		if ok {
			t.CNIBin = dir
			break
		}
	}
	if t.CNIBin == "" {
		missing = append(missing, "CNI plugins ("+strings.Join(cniPlugins, ", ")+" in /usr/lib/cni)")
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing %s: `make node-tools` installs them (as root, with apt-get)", strings.Join(missing, ", ")))
	}
	t.Kubelet = kubelet
	if kubelet == "" {
		errs = append(errs, errors.New("no kubelet: GRAFT_E2E_KUBELET is not set (`make e2e` builds it and sets it)"))
	} else if _, err := os.Stat(kubelet); err != nil {
		errs = append(errs, fmt.Errorf("kubelet: %w", err))
	}
	return t, errors.Join(errs...)
}

// Options describe one node.
type Options struct {
	Tools Tools
	// Name is the Node's name.
	Name string
	// Dir is the run's directory; the node keeps its state in Dir/Name.
	Dir string
	// Kubeconfig is how the kubelet reaches the API server.
	Kubeconfig string
	// Labels and Taints are registered with the Node.
	Labels map[string]string
	Taints []corev1.Taint
	// SandboxImage is the Pod sandbox ("pause") image's reference and
	// SandboxArchive its archive, imported before the kubelet starts.
	SandboxImage, SandboxArchive string
	// Graft, when set, is graft's binary, which the node installs as
	// graft's CNI plugin (graft-cni) and chains last in its Pod network,
	// as docs/concepts/mesh-traffic.md tells a cluster to: Pods annotated
	// for it get their traffic redirected through their mesh proxy.
	Graft string
}

// Label marks the real nodes (value "real"), beside kwok's "kwok"
// (cluster.NodeLabel).
const Label = "type"

// Node is a running node.
type Node struct {
	Name string
	// IP is the node's address (its bridge's), where the kubelet serves.
	IP netip.Addr
	// PodCIDR is where its Pods' addresses come from.
	PodCIDR netip.Prefix

	tools      Tools
	dir        string
	sock       string
	bridge     string
	containerd *proc.Process
	kubelet    *proc.Process

	stopOnce sync.Once
	stopErr  error
}

// bridgePrefix starts the name of every bridge a node creates; the
// creating process's id and the node's index follow.
const bridgePrefix = "gb"

// Start starts a node and returns once the API server has it Ready. On
// error the returned Node holds what started, and the caller must still
// Stop it.
func Start(ctx context.Context, client kubernetes.Interface, o Options) (*Node, error) {
	if o.Name == "" || o.Dir == "" || o.Kubeconfig == "" || o.SandboxImage == "" || o.SandboxArchive == "" {
		return nil, errors.New("node: Name, Dir, Kubeconfig and the sandbox image are required")
	}
	n := &Node{Name: o.Name, tools: o.Tools, dir: filepath.Join(o.Dir, o.Name)}
	n.sock = filepath.Join(n.dir, "containerd.sock")
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return nil, fmt.Errorf("node %s: %w", o.Name, err)
	}
	if err := removeStaleBridges(ctx); err != nil {
		return nil, err
	}
	if err := n.makeBridge(ctx); err != nil {
		return n, err
	}
	if err := n.startContainerd(ctx, o); err != nil {
		return n, err
	}
	if err := n.Import(ctx, o.SandboxArchive); err != nil {
		return n, err
	}
	if err := n.startKubelet(ctx, client, o); err != nil {
		return n, err
	}
	return n, nil
}

var nodeIndex struct {
	sync.Mutex
	next int
}

// makeBridge creates the node's bridge with the first address of a /24
// no route on this machine uses, which becomes the node's address and
// its Pods' gateway.
func (n *Node) makeBridge(ctx context.Context) error {
	nodeIndex.Lock()
	nodeIndex.next++
	i := nodeIndex.next
	nodeIndex.Unlock()
	pid := os.Getpid()
	n.bridge = fmt.Sprintf("%s%d-%d", bridgePrefix, pid, i)
	routes, err := ip(ctx, "-4", "route", "show", "table", "all")
	if err != nil {
		return err
	}
	for k := range 256 {
		// 10.250.0.0 to 10.254.255.0, from the process id: clear of the
		// harness's Service range, kwok's Pod range and the network
		// namespaces' subnets (cluster.Network, 10.200-10.249).
		s := (pid*8 + i + k) % (5 * 256)
		subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(250 + s/256), byte(s % 256), 0}), 24)
		if strings.Contains(routes, strings.TrimSuffix(subnet.Addr().String(), "0")) {
			continue
		}
		n.PodCIDR = subnet
		n.IP = subnet.Addr().Next()
		break
	}
	if !n.IP.IsValid() {
		return errors.New("node: no free /24 in 10.250.0.0-10.254.255.0 for a node's Pods")
	}
	for _, args := range [][]string{
		{"link", "add", n.bridge, "type", "bridge"},
		{"addr", "add", netip.PrefixFrom(n.IP, 24).String(), "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	} {
		if _, err := ip(ctx, args...); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	return nil
}

// removeStaleBridges deletes bridges whose creating process is gone.
func removeStaleBridges(ctx context.Context) error {
	out, err := ip(ctx, "-o", "link", "show", "type", "bridge")
	if err != nil {
		return err
	}
	var errs []error
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name := strings.TrimSuffix(f[1], ":")
		rest, ok := strings.CutPrefix(name, bridgePrefix)
		if !ok {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		if _, err := strconv.Atoi(pidText); !ok || err != nil {
			continue
		}
		if _, err := os.Stat("/proc/" + pidText); err == nil {
			continue
		}
		if _, err := ip(ctx, "link", "delete", name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// containerdConfig is containerd's configuration (version 2): everything
// under the node's directory, the CRI plugin with the harness's sandbox
// image and CNI configuration. restrict_oom_score_adj: some machines (this
// one) refuse a negative oom_score_adj, and runc fails every sandbox
// without it.
const containerdConfig = `version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %[6]q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[7]q
    conf_dir = %[8]q
    max_conf_num = 1
`

// cniConfig is the node's Pod network: the node's bridge (made by
// makeBridge, which holds the gateway address, so the plugin need not
// be the gateway and never turns on IP forwarding), addresses from its
// /24, portmap for hostPorts, and graft's plugin last when the node
// installs it (%[5]s, graftCNI).
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "graft-e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %[1]q,
      "isGateway": false,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %[2]q, "gateway": %[3]q}]],
        "routes": [{"dst": "0.0.0.0/0", "gw": %[3]q}],
        "dataDir": %[4]q
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}%[5]s
  ]
}
`

// graftCNI is graft's plugin's entry, last in the list.
const graftCNI = `,
    {"type": "graft-cni", "capabilities": {"io.kubernetes.cri.pod-annotations": true}}`

func (n *Node) startContainerd(ctx context.Context, o Options) error {
	cniDir := filepath.Join(n.dir, "cni")
	if err := os.MkdirAll(cniDir, 0o755); err != nil {
		return err
	}
	binDir, err := n.cniBin(o.Graft)
	if err != nil {
		return err
	}
	chained := ""
	if o.Graft != "" {
		chained = graftCNI
	}
	conflist := fmt.Sprintf(cniConfig, n.bridge, n.PodCIDR.String(), n.IP.String(), filepath.Join(n.dir, "cni-ipam"), chained)
	if err := os.WriteFile(filepath.Join(cniDir, "10-graft-e2e.conflist"), []byte(conflist), 0o644); err != nil {
		return err
	}
	config := fmt.Sprintf(containerdConfig,
		filepath.Join(n.dir, "containerd-root"), filepath.Join(n.dir, "containerd-state"),
		n.sock, n.sock+".ttrpc", o.SandboxImage, n.tools.Runc, binDir, cniDir)
	configPath := filepath.Join(n.dir, "containerd.toml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return err
	}
	n.containerd, err = proc.Start(proc.Spec{
		Name: n.Name + "-containerd", Dir: n.dir, Bin: n.tools.Containerd,
		Args: []string{"--config", configPath},
		Env: []string{
			// The runc shim is found on PATH, next to containerd.
			"PATH=" + filepath.Dir(n.tools.Shim) + ":" + os.Getenv("PATH"),
			// Nothing is ever pulled: every image is imported. A Pod
			// naming an image that was not (a default nobody builds)
			// must fail here, not reach out to a registry: registry
			// requests go to a proxy on loopback that refuses them.
			"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=",
		},
	})
	if err != nil {
		return err
	}
	err = proc.Poll(ctx, n.containerd, 100*time.Millisecond, func(ctx context.Context) error {
		_, err := n.ctr(ctx, "version")
		return err
	})
	if err != nil {
		return fmt.Errorf("node %s: containerd: %w (log: %s)", n.Name, err, n.containerd.LogPath())
	}
	return nil
}

// cniBin makes the node's CNI binary directory: links to the plugins its
// network uses, and graft's binary as graft-cni when graft is set (graft
// is the CNI plugin when run under that name).
func (n *Node) cniBin(graft string) (string, error) {
	dir := filepath.Join(n.dir, "cni-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	links := map[string]string{}
	for _, p := range cniPlugins {
		links[p] = filepath.Join(n.tools.CNIBin, p)
	}
	if graft != "" {
		abs, err := filepath.Abs(graft)
		if err != nil {
			return "", err
		}
		links["graft-cni"] = abs
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("node %s: CNI plugin %s: %w", n.Name, name, err)
		}
	}
	return dir, nil
}

// ctr runs ctr against the node's containerd in the CRI's namespace.
func (n *Node) ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, n.tools.Ctr, append([]string{"--address", n.sock, "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Import loads an image archive (an OCI layout or docker save tarball)
// into the node's containerd, for Pods with imagePullPolicy Never or
// IfNotPresent, under the name the archive gives it.
func (n *Node) Import(ctx context.Context, archive string) error {
	_, err := n.importArchive(ctx, archive)
	return err
}

// ImportAs imports an archive under the name as instead of its own, as a
// push of a local build under a release's name would: a manifest names
// graft's release, `make images` tags the build with its version.
func (n *Node) ImportAs(ctx context.Context, archive, as string) error {
	name, err := n.importArchive(ctx, archive)
	if err != nil || name == as {
		return err
	}
	if _, err := n.ctr(ctx, "images", "tag", "--force", name, as); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	if _, err := n.ctr(ctx, "images", "rm", name); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	return nil
}

func (n *Node) importArchive(ctx context.Context, archive string) (string, error) {
	out, err := n.ctr(ctx, "images", "import", archive)
	if err != nil {
		return "", fmt.Errorf("node %s: %w", n.Name, err)
	}
	name := importedName(out)
	if name == "" {
		return "", fmt.Errorf("node %s: ctr import of %s named no image:\n%s", n.Name, archive, out)
	}
	return name, nil
}

// importedName is the image name ctr images import reports
// ("unpacking NAME (sha256:...)...done").
func importedName(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "unpacking "); ok {
			name, _, _ := strings.Cut(rest, " ")
			return name
		}
	}
	return ""
}

// kubeletConfig is the KubeletConfiguration of a node on a development
// machine or CI runner: cgroupfs without per-QoS cgroups or reservations
// (the machine is not the node's alone), no swap check, cgroup v1
// accepted, no image garbage collection (imported images cannot be
// pulled again) and eviction only when the machine is nearly full.
// Anonymous requests are allowed: the kubelet serves on the bridge's
// address only, which this machine's processes and the node's Pods alone
// reach.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]q
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[2]d
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: %[3]q
podLogsDir: %[4]q
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
serializeImagePulls: false
# A mounted ConfigMap's update reaches the Pods within this (default 1m):
# the tests change graft's configuration as users do, through its
# ConfigMap.
syncFrequency: 10s
registerWithTaints: %[5]s
`

func (n *Node) startKubelet(ctx context.Context, client kubernetes.Interface, o Options) error {
	addrs, err := proc.FreeAddrs(1)
	if err != nil {
		return err
	}
	taints := "[]"
	if len(o.Taints) > 0 {
		var parts []string
		for _, t := range o.Taints {
			parts = append(parts, fmt.Sprintf("{key: %q, value: %q, effect: %q}", t.Key, t.Value, t.Effect))
		}
		taints = "[" + strings.Join(parts, ", ") + "]"
	}
	config := fmt.Sprintf(kubeletConfig, n.IP.String(), addrs[0].Port(), "unix://"+n.sock,
		filepath.Join(n.dir, "pod-logs"), taints)
	configPath := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return err
	}
	labels := map[string]string{Label: "real"}
	for k, v := range o.Labels {
		labels[k] = v
	}
	var lv []string
	for k, v := range labels {
		lv = append(lv, k+"="+v)
	}
	slices.Sort(lv)
	n.kubelet, err = proc.Start(proc.Spec{Name: n.Name + "-kubelet", Dir: n.dir, Bin: n.tools.Kubelet, Args: []string{
		"--config=" + configPath,
		"--kubeconfig=" + o.Kubeconfig,
		"--root-dir=" + filepath.Join(n.dir, "kubelet"),
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.IP.String(),
		"--node-labels=" + strings.Join(lv, ","),
	}})
	if err != nil {
		return err
	}
	err = proc.Poll(ctx, n.kubelet, 250*time.Millisecond, func(ctx context.Context) error {
		node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("node %s: Ready=%s: %s", n.Name, c.Status, c.Message)
			}
		}
		return fmt.Errorf("node %s: no Ready condition yet", n.Name)
	})
	if err != nil {
		return fmt.Errorf("kubelet: %w (log: %s)", err, n.kubelet.LogPath())
	}
	// The kubelet decodes its configuration leniently: a misspelt field
	// is logged and ignored, and the node runs on the default (a pod log
	// directory shared with every other kubelet on the machine, say).
	if log := n.kubelet.Tail(1 << 20); strings.Contains(log, "strict decoding error") {
		return fmt.Errorf("kubelet: %s has a field the kubelet does not know (log: %s)", configPath, n.kubelet.LogPath())
	}
	return nil
}

// LogFiles are the node's containerd and kubelet logs.
func (n *Node) LogFiles() []string {
	var out []string
	for _, p := range []*proc.Process{n.containerd, n.kubelet} {
		if p != nil {
			out = append(out, p.LogPath())
		}
	}
	return out
}

// Logs returns the last max bytes of each of the node's logs.
func (n *Node) Logs(max int64) string {
	var b strings.Builder
	for _, p := range []*proc.Process{n.containerd, n.kubelet} {
		if p != nil {
			fmt.Fprintf(&b, "\n===== %s log (%s) =====\n%s\n", p.Name(), p.LogPath(), p.Tail(max))
		}
	}
	return b.String()
}

// Stop undoes Start: the kubelet, then every Pod sandbox (their
// containers and network), containerd, the mounts left under the node's
// directory and the bridge. It is safe to call more than once.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() { n.stopErr = n.stop() })
	return n.stopErr
}

func (n *Node) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	if n.kubelet != nil {
		errs = append(errs, n.kubelet.Stop(15*time.Second))
	}
	if n.containerd != nil && n.containerd.Running() {
		errs = append(errs, n.removeSandboxes(ctx))
		errs = append(errs, n.containerd.Stop(15*time.Second))
	}
	errs = append(errs, unmountUnder(n.dir))
	if n.bridge != "" {
		if _, err := ip(ctx, "link", "delete", n.bridge); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if strings.HasPrefix(mp, dir+"/") {
			mounts = append(mounts, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func ip(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// KubeletURL is the kubelet's HTTPS address.
func (n *Node) KubeletURL() string {
	return "https://" + net.JoinHostPort(n.IP.String(), "10250")
}
