package cni

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/google/go-cmp/cmp"
	"github.com/google/nftables"

	"github.com/graftdev/graft/internal/redirect"
	"github.com/graftdev/graft/templates"
)

// meshProxyAnnotations are the annotations the built-in mesh-proxy
// template writes with trafficRedirect: cni and the given overrides: the
// plugin reads what graft writes.
func meshProxyAnnotations(t *testing.T, overrides map[string]string) map[string]string {
	t.Helper()
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	tpl, ok := set.Get("mesh-proxy")
	if !ok {
		t.Fatal("no mesh-proxy template")
	}
	o := map[string]string{"trafficRedirect": "cni"}
	for k, v := range overrides {
		o[k] = v
	}
	f, err := tpl.Render(o)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"other.example/annotation": "kept"}
	for _, kv := range f.Annotations {
		out[kv.Key] = kv.Value
	}
	return out
}

func TestRulesForTheTemplatesAnnotations(t *testing.T) {
	r, ok, err := RulesFor(meshProxyAnnotations(t, map[string]string{"excludeInboundPorts": "9090,8443", "excludeOutboundPorts": "5432"}))
	if err != nil || !ok {
		t.Fatalf("RulesFor = %v, %v", ok, err)
	}
	want := redirect.Rules{
		ProxyUID: 1337, OutboundPort: 15001, InboundPort: 15006,
		ExcludeInboundPorts: []uint16{8443, 9090, 15021}, ExcludeOutboundPorts: []uint16{5432},
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	// The template's defaults: no outbound exclusion, the health port.
	r, ok, err = RulesFor(meshProxyAnnotations(t, nil))
	if err != nil || !ok || len(r.ExcludeOutboundPorts) != 0 || !cmp.Equal(r.ExcludeInboundPorts, []uint16{15021}) {
		t.Errorf("defaults: %+v, %v, %v", r, ok, err)
	}
}

func TestRulesForRefusesMalformed(t *testing.T) {
	good := meshProxyAnnotations(t, nil)
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for k, v := range good {
			m[k] = v
		}
		if v == "<unset>" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		annotations map[string]string
		want        string
	}{
		{with(annoMode, "iptables"), `want cni`},
		{with(annoProxyUID, "root"), `proxy-uid "root"`},
		{with(annoProxyUID, "<unset>"), `proxy-uid ""`},
		{with(annoOutboundPort, "99999"), `outbound-port: port "99999"`},
		{with(annoInboundPort, "15001"), `both 15001`},
		{with(annoExcludeInbound, "15021,x"), `exclude-inbound-ports: port "x"`},
		{with(annoExcludeOutbound, strings.Repeat("1,", 70)+"1"), `at most 64`},
	} {
		_, ok, err := RulesFor(tc.annotations)
		if ok || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RulesFor(%v) = %v, %v; want an error containing %q", tc.annotations, ok, err, tc.want)
		}
	}
	if _, ok, err := RulesFor(map[string]string{"other": "x"}); ok || err != nil {
		t.Errorf("a Pod without the annotations: %v, %v; want no rules and no error", ok, err)
	}
}

// stdinConf is the configuration the runtime writes on the plugin's stdin
// for a chained plugin: its entry, the runtime's capabilities, and the
// main plugin's result.
func stdinConf(t *testing.T, annotations map[string]string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"cniVersion":   "1.0.0",
		"name":         "k8s-pod-network",
		"type":         PluginType,
		"capabilities": map[string]bool{PodAnnotationsCapability: true},
		"runtimeConfig": map[string]any{
			PodAnnotationsCapability: annotations,
		},
		"prevResult": map[string]any{
			"cniVersion": "1.0.0",
			"interfaces": []any{map[string]any{"name": "eth0", "sandbox": "/var/run/netns/x"}},
			"ips":        []any{map[string]any{"address": "10.88.0.5/16", "interface": 0}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// captureStdout runs fn and returns what it printed: the plugin's result
// goes to the process's standard output, as the CNI protocol wants.
func captureStdout(t *testing.T, fn func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = old }()
	errc := make(chan error, 1)
	go func() { errc <- fn(); w.Close() }()
	out, _ := io.ReadAll(r)
	return string(out), <-errc
}

func TestAddPassesResultAndAppliesWhatIsAsked(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		wantApply   bool
	}{
		{"annotated Pod", meshProxyAnnotations(t, nil), true},
		{"Pod without the annotations", map[string]string{"a": "b"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var applied []string
			p := &Plugin{Apply: func(netns string, r redirect.Rules) error {
				applied = append(applied, fmt.Sprintf("%s %d->%d", netns, r.ProxyUID, r.OutboundPort))
				return nil
			}}
			out, err := captureStdout(t, func() error {
				return p.Add(&skel.CmdArgs{Netns: "/var/run/netns/pod", StdinData: stdinConf(t, tc.annotations), Args: "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web"})
			})
			if err != nil {
				t.Fatal(err)
			}
			var res map[string]any
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("result %q: %v", out, err)
			}
			if ips, _ := json.Marshal(res["ips"]); !bytes.Contains(ips, []byte("10.88.0.5/16")) {
				t.Errorf("the main plugin's result is not passed on: %s", out)
			}
			var want []string
			if tc.wantApply {
				want = []string{"/var/run/netns/pod 1337->15001"}
			}
			if !cmp.Equal(applied, want) {
				t.Errorf("applied %q, want %q", applied, want)
			}
		})
	}
}

func TestAddRefuses(t *testing.T) {
	p := &Plugin{Apply: func(string, redirect.Rules) error { return fmt.Errorf("netlink: operation not permitted") }}
	bad := meshProxyAnnotations(t, nil)
	bad[annoProxyUID] = "x"
	noPrev := map[string]any{"cniVersion": "1.0.0", "name": "n", "type": PluginType}
	noPrevJSON, _ := json.Marshal(noPrev)
	for _, tc := range []struct {
		name  string
		stdin []byte
		want  string
	}{
		{"malformed annotation", stdinConf(t, bad), "graft-cni: pod shop/web: " + annoProxyUID},
		{"apply fails", stdinConf(t, meshProxyAnnotations(t, nil)), "graft-cni: pod shop/web: netlink: operation not permitted"},
		{"not chained", noPrevJSON, "no previous result"},
		{"not JSON", []byte("{"), "network configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := captureStdout(t, func() error {
				return p.Add(&skel.CmdArgs{Netns: "/x", StdinData: tc.stdin, Args: "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web"})
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestAddProgramsANetworkNamespace: the plugin as the runtime runs it
// (redirect.ApplyNetNS) programs the namespace it is handed.
func TestAddProgramsANetworkNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes a network namespace and programs nftables in it")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip to make a network namespace")
	}
	name := fmt.Sprintf("graft-cni-%d", os.Getpid()%100000)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	path := "/var/run/netns/" + name

	_, err := captureStdout(t, func() error {
		return New().Add(&skel.CmdArgs{Netns: path, StdinData: stdinConf(t, meshProxyAnnotations(t, map[string]string{"excludeOutboundPorts": "5432"}))})
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	table, err := c.ListTableOfFamily(redirect.TableName, nftables.TableFamilyIPv4)
	if err != nil {
		t.Fatalf("no table %s in the Pod's namespace: %v", redirect.TableName, err)
	}
	rules, err := c.GetRules(table, &nftables.Chain{Name: "output", Table: table})
	if err != nil || len(rules) != 4 { // uid, loopback, 5432, redirect
		t.Fatalf("output chain: %d rules, %v; want 4", len(rules), err)
	}
}
