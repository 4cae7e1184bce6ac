// Command envoy stands in for Envoy on the harness's real nodes, where
// Envoy (C++) cannot be built. It takes the arguments the mesh-proxy
// template gives Envoy and refuses any other, and serves what the
// bootstrap in --config-yaml describes: the admin address (/ready answers
// LIVE) and each listener's HTTP routes (path or prefix matches, an
// optional prefix_rewrite) to the STATIC clusters' first endpoint.
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
	"strconv"
	"strings"

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
		Listeners []struct {
			Name         string  `json:"name"`
			Address      address `json:"address"`
			FilterChains []struct {
				Filters []struct {
					Name        string `json:"name"`
					TypedConfig struct {
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
		} `json:"listeners"`
		Clusters []struct {
			Name           string `json:"name"`
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

type address struct {
	SocketAddress struct {
		Address   string `json:"address"`
		PortValue int    `json:"port_value"`
	} `json:"socket_address"`
}

func (a address) hostPort() string {
	return net.JoinHostPort(a.SocketAddress.Address, strconv.Itoa(a.SocketAddress.PortValue))
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
	admin := http.NewServeMux()
	admin.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "LIVE") })
	admin.HandleFunc("/stats/prometheus", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "# stand-in: no statistics\nenvoy_server_live 1")
	})
	servers := []firstlog.Server{{Addr: b.Admin.Address.hostPort(), Handler: admin}}
	clusters := map[string]*url.URL{}
	for _, c := range b.StaticResources.Clusters {
		for _, e := range c.LoadAssignment.Endpoints {
			for _, lb := range e.LbEndpoints {
				if _, ok := clusters[c.Name]; !ok {
					clusters[c.Name] = &url.URL{Scheme: "http", Host: lb.Endpoint.Address.hostPort()}
				}
			}
		}
	}
	for _, l := range b.StaticResources.Listeners {
		mux := http.NewServeMux()
		for _, fc := range l.FilterChains {
			for _, f := range fc.Filters {
				for _, vh := range f.TypedConfig.RouteConfig.VirtualHosts {
					for _, rt := range vh.Routes {
						target, ok := clusters[rt.Route.Cluster]
						if !ok {
							return nil, fmt.Errorf("listener %s: route to unknown cluster %q", l.Name, rt.Route.Cluster)
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
		servers = append(servers, firstlog.Server{Addr: l.Address.hostPort(), Handler: mux})
	}
	return servers, nil
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
