// Command otelcol stands in for the OpenTelemetry Collector on the
// harness's real nodes until the real one is built from its modules. It
// takes the otel-agent template's one argument, --config=yaml:<config>,
// and serves what the configuration names: the health_check extension's
// endpoint (GET / answers 200) and the OTLP receivers' endpoints (HTTP
// POSTs to /v1/traces, /v1/metrics, /v1/logs answer 200; gRPC connections
// are accepted and held).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/e2e/internal/standin/firstlog"
)

const name = "otelcol (stand-in)"

type config struct {
	Receivers struct {
		OTLP struct {
			Protocols struct {
				GRPC *struct {
					Endpoint string `json:"endpoint"`
				} `json:"grpc"`
				HTTP *struct {
					Endpoint string `json:"endpoint"`
				} `json:"http"`
			} `json:"protocols"`
		} `json:"otlp"`
	} `json:"receivers"`
	Extensions struct {
		HealthCheck *struct {
			Endpoint string `json:"endpoint"`
		} `json:"health_check"`
	} `json:"extensions"`
	Service struct {
		Extensions []string                  `json:"extensions"`
		Pipelines  map[string]map[string]any `json:"pipelines"`
	} `json:"service"`
}

func main() {
	fl := flag.NewFlagSet("otelcol", flag.ContinueOnError)
	configFlag := fl.String("config", "", "yaml:<configuration>")
	if err := fl.Parse(os.Args[1:]); err != nil {
		firstlog.Fail(name, err)
	}
	if fl.NArg() > 0 {
		firstlog.Fail(name, fmt.Errorf("unexpected arguments %q", fl.Args()))
	}
	text, ok := strings.CutPrefix(*configFlag, "yaml:")
	if !ok {
		firstlog.Fail(name, errors.New("--config: only the yaml: form is known"))
	}
	var c config
	// Not strict: processors and exporters are the real Collector's to
	// judge; the stand-in reads what it serves.
	if err := yaml.Unmarshal([]byte(text), &c); err != nil {
		firstlog.Fail(name, fmt.Errorf("--config: %w", err))
	}
	if c.Extensions.HealthCheck == nil || c.Extensions.HealthCheck.Endpoint == "" {
		firstlog.Fail(name, errors.New("no health_check extension endpoint"))
	}
	health := http.NewServeMux()
	health.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, `{"status":"Server available"}`)
	})
	servers := []firstlog.Server{{Addr: c.Extensions.HealthCheck.Endpoint, Handler: health}}
	if h := c.Receivers.OTLP.Protocols.HTTP; h != nil {
		otlp := http.NewServeMux()
		for _, signal := range []string{"traces", "metrics", "logs"} {
			otlp.HandleFunc("POST /v1/"+signal, func(w http.ResponseWriter, r *http.Request) {
				n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, 8<<20))
				fmt.Printf("%s: received %d bytes of %s\n", name, n, signal)
			})
		}
		servers = append(servers, firstlog.Server{Addr: h.Endpoint, Handler: otlp})
	}
	if g := c.Receivers.OTLP.Protocols.GRPC; g != nil {
		l, err := net.Listen("tcp", g.Endpoint)
		if err != nil {
			firstlog.Fail(name, err)
		}
		go func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				go func() { io.Copy(io.Discard, conn); conn.Close() }()
			}
		}()
	}
	if err := firstlog.Serve(name, servers...); err != nil {
		firstlog.Fail(name, err)
	}
}
