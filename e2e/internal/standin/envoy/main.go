// Command envoy stands in for Envoy on the harness's real nodes, where
// Envoy (C++) cannot be built. It takes the arguments the mesh-proxy
// template gives Envoy and refuses any other, and serves what the
// bootstrap in --config-yaml describes: the admin address (/ready answers
// LIVE, /stats/prometheus the tcp_proxy connection counters), each HTTP
// listener's routes (path or prefix matches, an optional prefix_rewrite)
// to the STATIC clusters' first endpoint, and each tcp_proxy listener's
// connections to their original destination (tcp.go). It refuses a
// bootstrap asking for what it does not implement.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/e2e/internal/standin/firstlog"
)

const name = "envoy (stand-in)"

func main() {
	fl := flag.NewFlagSet("envoy", flag.ContinueOnError)
	fl.Int("concurrency", 0, "worker threads")
	fl.String("log-level", "info", "log level")
	fl.String("service-node", "", "node name")
	config := fl.String("config-yaml", "", "bootstrap")
	if err := fl.Parse(normalize(os.Args[1:])); err != nil {
		firstlog.Fail(name, err)
	}
	if fl.NArg() > 0 {
		firstlog.Fail(name, fmt.Errorf("unexpected arguments %q", fl.Args()))
	}
	servers, err := bootstrap(*config)
	if err != nil {
		firstlog.Fail(name, err)
	}
	if err := firstlog.Serve(name, servers...); err != nil {
		firstlog.Fail(name, err)
	}
}

// bootstrap is the subset of Envoy's bootstrap the stand-in serves.
type bootstrapConfig struct {
	Admin struct {
		Address address `json:"address"`
	} `json:"admin"`
	StaticResources struct {
		Listeners []listener `json:"listeners"`
		Clusters  []struct {
			Name           string `json:"name"`
			Type           string `json:"type"`
			ConnectTimeout string `json:"connect_timeout"`
			LoadAssignment struct {
				Endpoints []struct {
					LbEndpoints []struct {
						Endpoint struct {
							Address address `json:"address"`
						} `json:"endpoint"`
					} `json:"lb_endpoints"`
				} `json:"endpoints"`
			} `json:"load_assignment"`
		} `json:"clusters"`
	} `json:"static_resources"`
}

type listener struct {
	Name            string  `json:"name"`
	Address         address `json:"address"`
	ListenerFilters []struct {
		Name string `json:"name"`
	} `json:"listener_filters"`
	FilterChains []struct {
		// FilterChainMatch is read as a map to refuse any criterion but
		// the destination port.
		FilterChainMatch map[string]any `json:"filter_chain_match"`
		Filters          []struct {
			Name        string `json:"name"`
			TypedConfig struct {
				// tcp_proxy's.
				StatPrefix string `json:"stat_prefix"`
				Cluster    string `json:"cluster"`
				// http_connection_manager's.
				RouteConfig struct {
					VirtualHosts []struct {
						Routes []struct {
							Match struct {
								Path   string `json:"path"`
								Prefix string `json:"prefix"`
							} `json:"match"`
							Route struct {
								Cluster       string `json:"cluster"`
								PrefixRewrite string `json:"prefix_rewrite"`
							} `json:"route"`
						} `json:"routes"`
					} `json:"virtual_hosts"`
				} `json:"route_config"`
			} `json:"typed_config"`
		} `json:"filters"`
	} `json:"filter_chains"`
}

type address struct {
	SocketAddress struct {
		Address   string `json:"address"`
		PortValue int    `json:"port_value"`
	} `json:"socket_address"`
}

func (a address) hostPort() string {
	return net.JoinHostPort(a.SocketAddress.Address, strconv.Itoa(a.SocketAddress.PortValue))
}

// The filters the stand-in implements, by the names Envoy gives them.
const (
	httpConnectionManager = "envoy.filters.network.http_connection_manager"
	tcpProxy              = "envoy.filters.network.tcp_proxy"
	originalDst           = "envoy.filters.listener.original_dst"
)

// cluster is what a listener's filter may send to: a STATIC cluster's
// first endpoint (nil for a cluster without endpoints, which refuses every
// connection), or, for ORIGINAL_DST, the address the connection was sent to.
type cluster struct {
	endpoint    *url.URL
	passthrough bool
	timeout     time.Duration
}

func bootstrap(text string) ([]firstlog.Server, error) {
	if text == "" {
		return nil, errors.New("no --config-yaml")
	}
	var b bootstrapConfig
	if err := yaml.Unmarshal([]byte(text), &b); err != nil {
		return nil, fmt.Errorf("--config-yaml: %w", err)
	}
	if b.Admin.Address.SocketAddress.PortValue == 0 {
		return nil, errors.New("--config-yaml: no admin address")
	}
	clusters := map[string]cluster{}
	for _, c := range b.StaticResources.Clusters {
		cl := cluster{timeout: 5 * time.Second} // Envoy's default connect_timeout
		if c.ConnectTimeout != "" {
			d, err := time.ParseDuration(c.ConnectTimeout)
			if err != nil {
				return nil, fmt.Errorf("cluster %s: connect_timeout: %w", c.Name, err)
			}
			cl.timeout = d
		}
		switch c.Type {
		case "", "STATIC":
			for _, e := range c.LoadAssignment.Endpoints {
				for _, lb := range e.LbEndpoints {
					if cl.endpoint == nil {
						cl.endpoint = &url.URL{Scheme: "http", Host: lb.Endpoint.Address.hostPort()}
					}
				}
			}
		case "ORIGINAL_DST":
			cl.passthrough = true
		default:
			return nil, fmt.Errorf("cluster %s: type %s: the stand-in serves STATIC and ORIGINAL_DST", c.Name, c.Type)
		}
		clusters[c.Name] = cl
	}
	st := &stats{}
	servers := []firstlog.Server{{Addr: b.Admin.Address.hostPort(), Handler: adminMux(st)}}
	for _, l := range b.StaticResources.Listeners {
		srv, err := serveListener(l, clusters, st)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		servers = append(servers, srv)
	}
	return servers, nil
}

func adminMux(st *stats) *http.ServeMux {
	admin := http.NewServeMux()
	admin.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "LIVE") })
	admin.HandleFunc("/stats/prometheus", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "envoy_server_live 1")
		st.writePrometheus(w)
	})
	return admin
}

// serveListener serves one listener: HTTP routes, or TCP connections
// passed on by tcp_proxy filters.
func serveListener(l listener, clusters map[string]cluster, st *stats) (firstlog.Server, error) {
	var kinds []string
	for _, fc := range l.FilterChains {
		for _, f := range fc.Filters {
			if !slices.Contains(kinds, f.Name) {
				kinds = append(kinds, f.Name)
			}
		}
	}
	switch {
	case len(kinds) == 1 && kinds[0] == httpConnectionManager:
		return httpListener(l, clusters)
	case len(kinds) == 1 && kinds[0] == tcpProxy:
		return tcpListener(l, clusters, st)
	default:
		return firstlog.Server{}, fmt.Errorf("filters %q: the stand-in serves listeners of %s alone or of %s alone", kinds, httpConnectionManager, tcpProxy)
	}
}

func httpListener(l listener, clusters map[string]cluster) (firstlog.Server, error) {
	if len(l.ListenerFilters) > 0 {
		return firstlog.Server{}, errors.New("listener filters on an HTTP listener: not implemented by the stand-in")
	}
	mux := http.NewServeMux()
	for _, fc := range l.FilterChains {
		if len(fc.FilterChainMatch) > 0 {
			return firstlog.Server{}, errors.New("filter_chain_match on an HTTP listener: not implemented by the stand-in")
		}
		for _, f := range fc.Filters {
			for _, vh := range f.TypedConfig.RouteConfig.VirtualHosts {
				for _, rt := range vh.Routes {
					target := clusters[rt.Route.Cluster].endpoint
					if target == nil {
						return firstlog.Server{}, fmt.Errorf("route to %q, not a STATIC cluster with an endpoint", rt.Route.Cluster)
					}
					pattern := rt.Match.Path
					if pattern == "" {
						pattern = rt.Match.Prefix
						if !strings.HasSuffix(pattern, "/") {
							pattern += "/"
						}
					}
					mux.Handle(pattern, proxy(target, rt.Match.Path+rt.Match.Prefix, rt.Route.PrefixRewrite))
				}
			}
		}
	}
	return firstlog.Server{Addr: l.Address.hostPort(), Handler: mux}, nil
}

// proxy forwards to target, replacing the matched prefix with rewrite
// when one is given.
func proxy(target *url.URL, matched, rewrite string) http.Handler {
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		if rewrite != "" {
			r.Out.URL.Path = rewrite + strings.TrimPrefix(r.In.URL.Path, matched)
		}
	}}
	return rp
}

// normalize turns Envoy's "--flag value" pairs into what package flag
// reads: it reads those already, but a value starting with "-" would be
// taken for a flag.
func normalize(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && i+1 < len(args) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}
