package main

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

const admin = "admin: {address: {socket_address: {address: 127.0.0.1, port_value: 15000}}}\n"

// tcpBootstrap is a bootstrap of one tcp_proxy listener on port whose
// chains are chains, with the clusters a passthrough and a blackhole.
func tcpBootstrap(port int, listenerFilters, chains string) string {
	return admin + fmt.Sprintf(`static_resources:
  listeners:
    - name: outbound
      address: {socket_address: {address: 127.0.0.1, port_value: %d}}
      listener_filters: %s
      filter_chains: %s
  clusters:
    - {name: passthrough, type: ORIGINAL_DST, lb_policy: CLUSTER_PROVIDED, connect_timeout: 10s}
    - {name: blackhole, type: STATIC, connect_timeout: 1s}
`, port, listenerFilters, chains)
}

const (
	origDst  = `[{name: envoy.filters.listener.original_dst}]`
	loopPass = `[{filter_chain_match: {destination_port: 15001}, filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {stat_prefix: outbound_loop, cluster: blackhole}}]},
                    {filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {stat_prefix: outbound, cluster: passthrough}}]}]`
)

func TestBootstrapRefusesWhatItDoesNotImplement(t *testing.T) {
	for _, tc := range []struct {
		name, bootstrap, want string
	}{
		{"no admin", "static_resources: {}\n", "no admin address"},
		{"tcp_proxy without original_dst", tcpBootstrap(15001, "[]", loopPass), "need exactly the listener filter"},
		{"another listener filter", tcpBootstrap(15001, `[{name: envoy.filters.listener.tls_inspector}]`, loopPass), "need exactly the listener filter"},
		{"another chain match", tcpBootstrap(15001, origDst,
			`[{filter_chain_match: {server_names: [a]}, filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {stat_prefix: x, cluster: blackhole}}]}]`),
			"matches destination_port only"},
		{"two chains for a port", tcpBootstrap(15001, origDst,
			`[{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {stat_prefix: a, cluster: passthrough}}]}, {filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {stat_prefix: b, cluster: passthrough}}]}]`),
			"two filter chains"},
		{"unknown cluster", tcpBootstrap(15001, origDst,
			`[{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {stat_prefix: a, cluster: nowhere}}]}]`),
			"unknown cluster"},
		{"another network filter", tcpBootstrap(15001, origDst,
			`[{filters: [{name: envoy.filters.network.redis_proxy}]}]`),
			"serves listeners of"},
		{"a cluster type", admin + "static_resources: {clusters: [{name: x, type: EDS}]}\n", "type EDS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bootstrap(tc.bootstrap)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("bootstrap: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestLoopRefusedAndCounted: a connection addressed to the outbound
// listener itself (not redirected, so its original destination is the
// listener's own address) takes the loop chain, which closes it, and is
// counted under that chain's stat prefix; nothing is passed.
func TestLoopRefusedAndCounted(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	chains := strings.ReplaceAll(loopPass, "15001", fmt.Sprint(port))
	var b bootstrapConfig
	if err := yaml.Unmarshal([]byte(tcpBootstrap(port, origDst, chains)), &b); err != nil {
		t.Fatal(err)
	}
	clusters := map[string]cluster{"passthrough": {passthrough: true, timeout: time.Second}, "blackhole": {}}
	st := &stats{}
	srv, err := tcpListener(b.StaticResources.Listeners[0], clusters, st)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.TCP(ln) }()

	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if got, err := io.ReadAll(c); err != nil || len(got) != 0 {
		t.Fatalf("read %q, %v: want the connection closed", got, err)
	}
	var out strings.Builder
	st.writePrometheus(&out)
	for _, want := range []string{
		`envoy_tcp_downstream_cx_total{envoy_tcp_prefix="outbound"} 0`,
		`envoy_tcp_downstream_cx_total{envoy_tcp_prefix="outbound_loop"} 1`,
	} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("stats:\n%s\nwant the line %s", out.String(), want)
		}
	}
}
