package realnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/e2e/internal/realcluster"
	"github.com/graftdev/graft/internal/names"
)

// The mesh-proxy template's container and ports, as it renders them.
const (
	meshProfile   = "mesh-proxy"
	meshTemplate  = "mesh-proxy"
	proxySidecar  = "graft-proxy"
	proxyInit     = "graft-proxy-init"
	proxyHealth   = 15021
	appPort       = 8080
	injectTimeout = 3 * time.Minute
)

// TestRealMeshProxyInitContainer: with trafficRedirect init-container,
// graft's proxy-init programs the Pod's network namespace on a real node
// (the namespace allows privileged Pods, the profile Pod Security level
// privileged), and the Pod's TCP goes through the proxy (meshTraffic).
func TestRealMeshProxyInitContainer(t *testing.T) {
	c := need(t)
	// proxy-init runs as root with NET_ADMIN.
	ns := meshNamespace(t, c, "real-mesh-init", "privileged")
	direct := serveHello(t, c.Nodes[0].IP, "direct")
	setMeshParams(t, c, ns, "privileged", map[string]string{
		"trafficRedirect":      "init-container",
		"excludeOutboundPorts": strconv.Itoa(int(direct.addr.Port())),
	})
	p := runMeshApp(t, c, ns)
	cs, _ := containerStatus(p, proxyInit)
	if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
		t.Fatalf("%s did not complete: %+v", proxyInit, cs.State)
	}
	t.Logf("%s: %s", proxyInit, strings.TrimSpace(logs(t, c, p, proxyInit)))
	meshTraffic(t, c, p, direct)
}

// TestRealMeshProxyCNI: with trafficRedirect cni (the template's
// default), graft's CNI plugin, chained after the node's bridge plugin and
// run by containerd's CRI when it makes the Pod's network, reads the
// Pod's redirect.graft.dev annotations and programs its network namespace;
// the Pod has no init container and stays within Pod Security restricted,
// which its namespace enforces, and its TCP goes through the proxy
// (meshTraffic).
func TestRealMeshProxyCNI(t *testing.T) {
	c := need(t)
	ns := meshNamespace(t, c, "real-mesh-cni", "restricted")
	direct := serveHello(t, c.Nodes[0].IP, "direct")
	setMeshParams(t, c, ns, "", map[string]string{
		"excludeOutboundPorts": strconv.Itoa(int(direct.addr.Port())),
	})
	p := runMeshApp(t, c, ns)
	if p.Annotations["redirect.graft.dev/mode"] != "cni" {
		t.Fatalf("the Pod is not annotated for graft-cni: %v", p.Annotations)
	}
	if hasInit(p, proxyInit) {
		t.Fatalf("the Pod has %s", proxyInit)
	}
	meshTraffic(t, c, p, direct)
}

// meshNamespace creates a namespace injected with the mesh-proxy profile,
// enforcing the Pod Security level, deleted when the test ends.
func meshNamespace(t *testing.T, c *realcluster.Cluster, ns, level string) string {
	t.Helper()
	if err := c.CreateNamespace(t.Context(), ns, map[string]string{
		names.Inject:                         meshProfile,
		"pod-security.kubernetes.io/enforce": level,
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("namespace %s:\n%s", ns, c.PodsReport(context.Background(), ns))
		}
		_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	return ns
}

// runMeshApp runs the app in ns and returns its Pod, Ready.
func runMeshApp(t *testing.T, c *realcluster.Cluster, ns string) *corev1.Pod {
	t.Helper()
	if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), deployment("app", appContainer()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &waitAvailable(t, c, ns, "app")[0]
}

// meshTraffic drives the injected Pod p from the node and checks its TCP
// goes through the proxy (the Envoy stand-in, serving the template's
// bootstrap) as the template says:
//   - the app's outbound connection to a server on the node reaches it,
//     through the proxy's outbound listener (15001), whose counter counts
//     it once: the proxy's own connection onwards, made as its uid, is not
//     redirected again;
//   - an inbound request to the app's port reaches the app through the
//     inbound listener (15006): the app sees it come from the Pod's own
//     address, where the proxy connected from;
//   - a connection to direct, whose port the redirection excludes,
//     reaches its server without passing the proxy.
func meshTraffic(t *testing.T, c *realcluster.Cluster, p *corev1.Pod, direct *helloServer) {
	t.Helper()
	through := serveHello(t, c.Nodes[0].IP, "through")
	podIP, err := netip.ParseAddr(p.Status.PodIP)
	if err != nil {
		t.Fatalf("Pod IP %q: %v", p.Status.PodIP, err)
	}
	m := meshProbe{t: t, c: c, pod: p, podIP: podIP}

	// Outbound through the proxy, the request inbound through it too.
	before := m.counters()
	got, local := m.dial(through.addr)
	if want := "through server: hello " + podIP.String(); !strings.HasPrefix(got.Reply, want) {
		t.Errorf("the app's connection to %s: reply %q, want %q...", through.addr, got.Reply, want)
	}
	if n := through.accepted(); n != 1 {
		t.Errorf("the server at %s accepted %d connections, want 1", through.addr, n)
	}
	after := m.counters()
	if after["outbound"] != before["outbound"]+1 {
		t.Errorf("the proxy's outbound connections went from %d to %d, want one more", before["outbound"], after["outbound"])
	}
	if after["outbound_loop"] != 0 || after["inbound_loop"] != 0 {
		t.Errorf("the proxy refused connections to itself: %v", after)
	}
	m.waitLog("outbound", `\S+`, through.addr, 1)
	// The request to the app: through 15006, from the proxy's side of it.
	m.waitLog("inbound", regexp.QuoteMeta(local.String()), netip.AddrPortFrom(podIP, appPort), 1)
	if peer, err := netip.ParseAddrPort(got.Peer); err != nil || peer.Addr() != podIP {
		t.Errorf("the app saw the request come from %q, want the Pod's own address %s (the proxy's connection)", got.Peer, podIP)
	}

	// An excluded outbound port: straight to the server.
	before = after
	got, _ = m.dial(direct.addr)
	if want := "direct server: hello " + podIP.String(); !strings.HasPrefix(got.Reply, want) {
		t.Errorf("the app's connection to %s: reply %q, want %q...", direct.addr, got.Reply, want)
	}
	if n := direct.accepted(); n != 1 {
		t.Errorf("the server at %s accepted %d connections, want 1", direct.addr, n)
	}
	if after = m.counters(); after["outbound"] != before["outbound"] {
		t.Errorf("the proxy's outbound connections went from %d to %d for an excluded port, want none more", before["outbound"], after["outbound"])
	}
	// A marker after it: once the proxy logged the marker, it would have
	// logged the excluded connection had it passed it.
	m.dial(through.addr)
	m.waitLog("outbound", `\S+`, through.addr, 2)
	if log := logs(t, c, p, proxySidecar); strings.Contains(log, "-> "+direct.addr.String()) {
		t.Errorf("the proxy passed the connection to the excluded port %d:\n%s", direct.addr.Port(), log)
	}
	t.Logf("proxy counters: %v", m.counters())
}

// setMeshParams sets the mesh-proxy profile's parameters in graft's
// configuration, and its Pod Security maxLevel unless "", with the
// guarantee policies generated for it, until the test ends; it returns
// once graft injects Pods of ns with them (its redirection excluding the
// outbound ports params exclude).
func setMeshParams(t *testing.T, c *realcluster.Cluster, ns, maxLevel string, params map[string]string) {
	t.Helper()
	orig := graftConfigMap(t, c).Data["config.yaml"]
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(orig), &doc); err != nil {
		t.Fatal(err)
	}
	profiles, _ := doc["profiles"].(map[string]any)
	profile, _ := profiles[meshProfile].(map[string]any)
	if profile == nil {
		t.Fatalf("deploy/base/config.yaml has no profile %s", meshProfile)
	}
	profile["params"] = map[string]any{meshTemplate: params}
	if maxLevel != "" {
		profile["podSecurity"] = map[string]any{"maxLevel": maxLevel}
	}
	config, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(configFile, config, 0o600); err != nil {
		t.Fatal(err)
	}
	guarantee := runGraft(t, "guarantee", "--config", configFile, "--templates-dir", filepath.Join(c.Graft.Dir, "base", "templates"))
	t.Cleanup(func() {
		if err := c.ApplyObjects(context.Background(), shippedPolicies(c)); err != nil {
			t.Errorf("restore the shipped guarantee: %v", err)
		}
		updateGraftConfig(t, c, orig)
		waitInjected(t, c, ns, func(p *corev1.Pod) error { return excludes(p, "") })
	})
	if err := c.ApplyYAML(t.Context(), guarantee); err != nil {
		t.Fatal(err)
	}
	updateGraftConfig(t, c, string(config))
	waitInjected(t, c, ns, func(p *corev1.Pod) error { return excludes(p, params["excludeOutboundPorts"]) })
}

// excludes checks the outbound ports the Pod's redirection excludes, in
// proxy-init's arguments or graft-cni's annotation, whichever it has.
func excludes(p *corev1.Pod, ports string) error {
	got, ok := p.Annotations["redirect.graft.dev/exclude-outbound-ports"]
	for _, ic := range p.Spec.InitContainers {
		for _, a := range ic.Args {
			if v, found := strings.CutPrefix(a, "--exclude-outbound-ports="); found && ic.Name == proxyInit {
				got, ok = v, true
			}
		}
	}
	if !ok {
		return errors.New("no redirection injected")
	}
	if got != ports {
		return fmt.Errorf("excluded outbound ports %q, want %q", got, ports)
	}
	return nil
}

// updateGraftConfig replaces graft's config.yaml in its ConfigMap and
// waits until every graft replica has reloaded its configuration since:
// the API server sends each dry run to any replica, so one injecting
// with the new configuration proves nothing of the others.
func updateGraftConfig(t *testing.T, c *realcluster.Cluster, config string) {
	t.Helper()
	before := graftReloads(t, c)
	cm := graftConfigMap(t, c)
	cm.Data["config.yaml"] = config
	if _, err := c.Client.CoreV1().ConfigMaps(cm.Namespace).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), injectTimeout)
	defer cancel()
	err := poll(ctx, time.Second, func(context.Context) error {
		for pod, n := range graftReloads(t, c) {
			if n <= before[pod] {
				return fmt.Errorf("graft Pod %s has not reloaded its configuration (%d reloads)", pod, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var configReloads = regexp.MustCompile(`(?m)^graft_config_reloads_total\{result="success"\} (\d+)$`)

// graftReloads reads each running graft Pod's successful configuration
// reloads from its admin port's /metrics (plain HTTP on :8080).
func graftReloads(t *testing.T, c *realcluster.Cluster) map[string]int {
	t.Helper()
	d := c.Graft.Deployment
	pods, err := c.Client.CoreV1().Pods(d.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" {
			continue
		}
		u := "http://" + net.JoinHostPort(p.Status.PodIP, "8080") + "/metrics"
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		resp.Body.Close()
		n := 0
		if m := configReloads.FindSubmatch(body); m != nil {
			n, _ = strconv.Atoi(string(m[1]))
		}
		out[p.Name] = n
	}
	if len(out) == 0 {
		t.Fatal("no running graft Pod")
	}
	return out
}

// waitInjected polls a dry-run create of the app's Pod in ns until what
// graft makes of it passes check (graft reloads its configuration once the
// kubelet updates the mounted ConfigMap).
func waitInjected(t *testing.T, c *realcluster.Cluster, ns string, check func(*corev1.Pod) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), injectTimeout)
	defer cancel()
	d := deployment("probe", appContainer())
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Labels: d.Spec.Template.Labels}, Spec: d.Spec.Template.Spec}
	err := poll(ctx, time.Second, func(ctx context.Context) error {
		p, err := c.Client.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		return check(p)
	})
	if err != nil {
		t.Fatalf("graft never served its new configuration: %v", err)
	}
}

func hasInit(p *corev1.Pod, name string) bool {
	for _, ic := range p.Spec.InitContainers {
		if ic.Name == name {
			return true
		}
	}
	return false
}

// helloServer is a TCP server on the node's address that greets each
// connection with the address it came from and closes it.
type helloServer struct {
	addr netip.AddrPort
	mu   sync.Mutex
	n    int
}

func serveHello(t *testing.T, ip netip.Addr, name string) *helloServer {
	t.Helper()
	ln, err := net.Listen("tcp4", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &helloServer{addr: ln.Addr().(*net.TCPAddr).AddrPort()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.n++
			s.mu.Unlock()
			from := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr()
			fmt.Fprintf(c, "%s server: hello %s\n", name, from)
			c.Close()
		}
	}()
	return s
}

func (s *helloServer) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// meshProbe drives the injected Pod from the node's side.
type meshProbe struct {
	t     *testing.T
	c     *realcluster.Cluster
	pod   *corev1.Pod
	podIP netip.Addr
}

// dialReply is the app's /dial answer.
type dialReply struct {
	Peer  string `json:"peer"`
	Reply string `json:"reply"`
}

// dial asks the app to connect to addr; it returns the app's answer and
// the local address of the request to the app.
func (m meshProbe) dial(addr netip.AddrPort) (dialReply, netip.AddrPort) {
	m.t.Helper()
	var local netip.AddrPort
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, a)
			if err == nil {
				local = c.LocalAddr().(*net.TCPAddr).AddrPort()
			}
			return c, err
		},
	}}
	u := fmt.Sprintf("http://%s/dial?addr=%s", netip.AddrPortFrom(m.podIP, appPort), addr)
	resp, err := client.Get(u)
	if err != nil {
		m.t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		m.t.Fatalf("GET %s: %s: %s", u, resp.Status, body)
	}
	var r dialReply
	if err := json.Unmarshal(body, &r); err != nil {
		m.t.Fatalf("GET %s: %v: %s", u, err, body)
	}
	return r, local
}

var cxTotal = regexp.MustCompile(`(?m)^envoy_tcp_downstream_cx_total\{envoy_tcp_prefix="([^"]+)"\} (\d+)$`)

// counters reads the proxy's tcp_proxy connection counters by stat
// prefix, from its health port (which the redirection leaves alone).
func (m meshProbe) counters() map[string]uint64 {
	m.t.Helper()
	u := fmt.Sprintf("http://%s/stats/prometheus", netip.AddrPortFrom(m.podIP, proxyHealth))
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get(u)
	if err != nil {
		m.t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	out := map[string]uint64{}
	for _, sm := range cxTotal.FindAllStringSubmatch(string(body), -1) {
		n, _ := strconv.ParseUint(sm[2], 10, 64)
		out[sm[1]] = n
	}
	for _, want := range []string{"outbound", "inbound"} {
		if _, ok := out[want]; !ok {
			m.t.Fatalf("GET %s: no %s counter:\n%s", u, want, body)
		}
	}
	return out
}

// waitLog waits for the proxy's log to show a connection it passed:
// "<listener> <from> -> <to>", from a regular expression, at least times
// times.
func (m meshProbe) waitLog(listener, from string, to netip.AddrPort, times int) {
	m.t.Helper()
	re := regexp.MustCompile(`(?m): ` + regexp.QuoteMeta(listener) + ` ` + from + ` -> ` + regexp.QuoteMeta(to.String()) + `$`)
	ctx, cancel := context.WithTimeout(m.t.Context(), time.Minute)
	defer cancel()
	err := poll(ctx, 250*time.Millisecond, func(context.Context) error {
		if n := len(re.FindAllString(logs(m.t, m.c, m.pod, proxySidecar), -1)); n < times {
			return fmt.Errorf("%d lines matching %s, want %d", n, re, times)
		}
		return nil
	})
	if err != nil {
		m.t.Fatalf("the proxy's log: %v:\n%s", err, logs(m.t, m.c, m.pod, proxySidecar))
	}
}
