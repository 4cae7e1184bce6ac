// Package envoycheck checks the Envoy bootstrap graft's mesh-proxy template
// renders against Envoy's own API definitions at the release the template's
// default image runs: every parameter combination lint tries is parsed
// strictly into a bootstrap.v3.Bootstrap (an unknown field or an
// unresolvable typed_config fails) and every message, the typed_configs
// inside it included, passes the validation rules Envoy's API declares.
package envoycheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/templates"

	// The typed_config types the bootstrap uses: protojson resolves an Any
	// only if its type is registered, so a type missing here fails the
	// parse, as an extension missing from Envoy's build would.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
)

// envoyAPIVersion is the Envoy release go-control-plane/envoy describes:
// its module version (go.mod).
const envoyAPIVersion = "v1.40.0"

// container is the part of a rendered container these checks read.
type container struct {
	Name  string   `json:"name"`
	Image string   `json:"image"`
	Args  []string `json:"args"`
}

// proxyCase is the mesh-proxy template rendered in one lint case.
type proxyCase struct {
	label       string
	proxy       container
	init        *container // graft-proxy-init, when rendered
	annotations map[string]string
}

func renderCases(t *testing.T) (*templates.Template, []proxyCase) {
	t.Helper()
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	tpl, ok := set.Get("mesh-proxy")
	if !ok {
		t.Fatal("no mesh-proxy template")
	}
	var out []proxyCase
	for _, c := range tpl.Cases() {
		f, err := tpl.Render(c.Overrides)
		if err != nil {
			t.Fatalf("%s: %v", c.Label, err)
		}
		pc := proxyCase{label: c.Label, annotations: map[string]string{}}
		for _, el := range f.InitContainers {
			var ctr container
			if err := json.Unmarshal(el.Raw, &ctr); err != nil {
				t.Fatalf("%s: %s: %v", c.Label, el.Name, err)
			}
			switch ctr.Name {
			case "graft-proxy":
				pc.proxy = ctr
			case "graft-proxy-init":
				pc.init = &ctr
			}
		}
		for _, kv := range f.Annotations {
			pc.annotations[kv.Key] = kv.Value
		}
		if pc.proxy.Name == "" {
			t.Fatalf("%s: no graft-proxy container", c.Label)
		}
		out = append(out, pc)
	}
	if len(out) < 10 {
		t.Fatalf("only %d lint cases", len(out))
	}
	return tpl, out
}

// flag returns the value following name in args.
func flag(args []string, name string) (string, bool) {
	i := slices.Index(args, name)
	if i < 0 || i+1 >= len(args) {
		return "", false
	}
	return args[i+1], true
}

// parseBootstrap parses a YAML bootstrap as Envoy does from --config-yaml:
// YAML to JSON, then the proto3 JSON mapping, strictly.
func parseBootstrap(yamlText string) (*bootstrapv3.Bootstrap, error) {
	js, err := yaml.YAMLToJSON([]byte(yamlText))
	if err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	var b bootstrapv3.Bootstrap
	// The zero options refuse unknown fields and resolve every Any through
	// the registry, failing on an unknown type.
	if err := (protojson.UnmarshalOptions{}).Unmarshal(js, &b); err != nil {
		return nil, fmt.Errorf("not a bootstrap.v3.Bootstrap: %w", err)
	}
	if err := validateDeep(&b); err != nil {
		return nil, err
	}
	return &b, nil
}

// validateDeep runs the validation rules of m and of every message inside
// it, the contents of each Any included: the generated ValidateAll of a
// message checks an Any's type URL at most, never what it holds.
func validateDeep(m proto.Message) error {
	var errs []error
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			errs = append(errs, err)
		}
	}
	var visit func(protoreflect.Message)
	visit = func(rm protoreflect.Message) {
		rm.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			if fd.Message() == nil {
				return true
			}
			each := func(v protoreflect.Value) {
				inner := v.Message()
				if a, ok := inner.Interface().(*anypb.Any); ok {
					msg, err := a.UnmarshalNew()
					if err != nil {
						errs = append(errs, fmt.Errorf("%s: %w", a.GetTypeUrl(), err))
						return
					}
					if err := validateDeep(msg); err != nil {
						errs = append(errs, fmt.Errorf("%s: %w", a.GetTypeUrl(), err))
					}
					return
				}
				visit(inner)
			}
			switch {
			case fd.IsList():
				for i := range v.List().Len() {
					each(v.List().Get(i))
				}
			case fd.IsMap():
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					each(mv)
					return true
				})
			default:
				each(v)
			}
			return true
		})
	}
	visit(m.ProtoReflect())
	return errors.Join(errs...)
}

// envoyLogLevels are the values Envoy's --log-level takes.
var envoyLogLevels = []string{"trace", "debug", "info", "warning", "warn", "error", "critical", "off"}

// TestBootstrapIsValidEnvoyConfig: in every case lint renders, the proxy's
// --config-yaml is a bootstrap Envoy's API accepts, and its other flags
// are values Envoy takes.
func TestBootstrapIsValidEnvoyConfig(t *testing.T) {
	_, cases := renderCases(t)
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			cfg, ok := flag(c.proxy.Args, "--config-yaml")
			if !ok {
				t.Fatalf("no --config-yaml in %q", c.proxy.Args)
			}
			if _, err := parseBootstrap(cfg); err != nil {
				t.Fatalf("Envoy %s refuses the bootstrap: %v\n%s", envoyAPIVersion, err, cfg)
			}
			if lvl, _ := flag(c.proxy.Args, "--log-level"); !slices.Contains(envoyLogLevels, lvl) {
				t.Errorf("--log-level %q is not one of Envoy's %v", lvl, envoyLogLevels)
			}
			if n, err := strconv.Atoi(mustFlag(t, c.proxy.Args, "--concurrency")); err != nil || n < 1 {
				t.Errorf("--concurrency %q is not a positive integer", mustFlag(t, c.proxy.Args, "--concurrency"))
			}
		})
	}
}

func mustFlag(t *testing.T, args []string, name string) string {
	t.Helper()
	v, ok := flag(args, name)
	if !ok {
		t.Fatalf("no %s in %q", name, args)
	}
	return v
}

// TestCheckRefusesBrokenBootstraps: the check fails where Envoy would, so
// a pass above means something.
func TestCheckRefusesBrokenBootstraps(t *testing.T) {
	_, cases := renderCases(t)
	good := mustFlag(t, cases[0].proxy.Args, "--config-yaml")
	if _, err := parseBootstrap(good); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"unknown field", "admin:\n", "admin:\n  bogus: 1\n", "unknown field"},
		{"port out of range", "port_value: 15021", "port_value: 70000", "PortValue"},
		{"unknown typed_config", "original_dst.v3.OriginalDst", "original_dst.v3.NoSuchFilter", "not found"},
		{"rule inside a typed_config", "stat_prefix: outbound,", `stat_prefix: "",`, "StatPrefix"},
		{"unknown cluster type", "type: ORIGINAL_DST", "type: ORIGINAL_DESTINATION", "invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(good, tc.old) {
				t.Fatalf("the bootstrap has no %q", tc.old)
			}
			_, err := parseBootstrap(strings.Replace(good, tc.old, tc.new, 1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestListenersWhereRedirectionSends: the bootstrap listens, with
// original-destination passthrough, on the ports the redirection (the
// proxy-init arguments or the CNI annotations) sends traffic to, and the
// health port the proxy answers probes on is never redirected.
func TestListenersWhereRedirectionSends(t *testing.T) {
	_, cases := renderCases(t)
	redirected := 0
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			b, err := parseBootstrap(mustFlag(t, c.proxy.Args, "--config-yaml"))
			if err != nil {
				t.Fatal(err)
			}
			ports := map[string]string{} // what the redirection says
			if c.init != nil {
				redirected++
				for _, a := range c.init.Args {
					if k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok {
						ports[k] = v
					}
				}
			} else if c.annotations["redirect.graft.dev/mode"] != "" {
				redirected++
				for k, v := range c.annotations {
					ports[strings.TrimPrefix(k, "redirect.graft.dev/")] = v
				}
			} else {
				return // trafficRedirect none: nothing to agree with
			}
			for _, dir := range []string{"outbound", "inbound"} {
				port, err := strconv.ParseUint(ports[dir+"-port"], 10, 32)
				if err != nil {
					t.Fatalf("%s-port %q: %v", dir, ports[dir+"-port"], err)
				}
				l := listenerOn(b, uint32(port))
				if l == nil {
					t.Fatalf("nothing listens on %s port %d", dir, port)
				}
				if !passesThrough(t, b, l) {
					t.Errorf("listener %s on %d does not pass connections to their original destination", l.GetName(), port)
				}
			}
			health := listenerOn(b, 15021)
			if health == nil {
				t.Fatal("no health listener on 15021")
			}
			if !slices.Contains(strings.Split(ports["exclude-inbound-ports"], ","), "15021") {
				t.Errorf("the health port 15021 is redirected: exclude-inbound-ports=%q", ports["exclude-inbound-ports"])
			}
			if uid := ports["proxy-uid"]; uid != "1337" {
				t.Errorf("proxy-uid %q, want the proxy's runAsUser 1337", uid)
			}
		})
	}
	if redirected == 0 {
		t.Fatal("no case redirects traffic")
	}
}

func listenerOn(b *bootstrapv3.Bootstrap, port uint32) *listenerv3.Listener {
	for _, l := range b.GetStaticResources().GetListeners() {
		if l.GetAddress().GetSocketAddress().GetPortValue() == port {
			return l
		}
	}
	return nil
}

// passesThrough: the listener restores the original destination and its
// catch-all filter chain proxies TCP to an ORIGINAL_DST cluster.
func passesThrough(t *testing.T, b *bootstrapv3.Bootstrap, l *listenerv3.Listener) bool {
	t.Helper()
	hasOrigDst := slices.ContainsFunc(l.GetListenerFilters(), func(f *listenerv3.ListenerFilter) bool {
		return f.GetName() == "envoy.filters.listener.original_dst"
	})
	if !hasOrigDst {
		return false
	}
	for _, fc := range l.GetFilterChains() {
		if fc.GetFilterChainMatch() != nil {
			continue
		}
		for _, f := range fc.GetFilters() {
			var tp tcpproxyv3.TcpProxy
			if f.GetTypedConfig().UnmarshalTo(&tp) != nil {
				continue
			}
			for _, c := range b.GetStaticResources().GetClusters() {
				if c.GetName() == tp.GetCluster() && c.GetType() == clusterv3.Cluster_ORIGINAL_DST {
					return true
				}
			}
		}
	}
	return false
}
