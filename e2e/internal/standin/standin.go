// Package standin lists the images the harness's real nodes run in place
// of programs that cannot be built here, each a small Go program of this
// directory built by package images under the exact name a built-in
// template gives the real image, so the Pods run graft's Pod specs as
// shipped:
//
//   - envoy: Envoy (C++), for mesh-proxy;
//   - otelcol: the OpenTelemetry Collector, for otel-agent;
//   - vault and sh: Vault's agent and the /bin/sh it is started through,
//     for secrets-agent;
//   - fluentbit: Fluent Bit (C), for log-shipper;
//
// and the harness's own: pause (the Pod sandbox) and app (the tests'
// application container). Each stand-in lays its binary out as the real
// image does (/otelcol, /bin/vault, /fluent-bit/bin/fluent-bit), refuses
// arguments the real program would not be given by the template, and
// serves the ports its probes ask.
package standin

import "github.com/graftdev/graft/e2e/internal/images"

// module is this module's import path; the stand-ins are its packages.
const module = "github.com/graftdev/graft/e2e/internal/standin/"

// ForTemplate returns the stand-in image named image for the built-in
// template tpl's default image, and whether there is one.
func ForTemplate(tpl, image string) (images.Spec, bool) {
	f, ok := byTemplate[tpl]
	if !ok {
		return images.Spec{}, false
	}
	s := f()
	s.Name = image
	return s, true
}

// Templates are the built-in templates that have a stand-in.
func Templates() []string {
	out := make([]string, 0, len(byTemplate))
	for t := range byTemplate {
		out = append(out, t)
	}
	return out
}

var byTemplate = map[string]func() images.Spec{
	// envoyproxy/envoy's entrypoint script runs envoy with the args when
	// the first is a flag, as the template's is.
	"mesh-proxy": func() images.Spec {
		return images.Spec{Binaries: []images.Binary{{Package: module + "envoy", Path: "/usr/local/bin/envoy"}}}
	},
	"otel-agent": func() images.Spec {
		return images.Spec{Binaries: []images.Binary{{Package: module + "otelcol", Path: "/otelcol"}}, User: "10001:10001"}
	},
	// The template runs its own command (/bin/sh -ec ... exec vault agent).
	"secrets-agent": func() images.Spec {
		return images.Spec{Binaries: []images.Binary{
			{Package: module + "vault", Path: "/bin/vault"},
			{Package: module + "sh", Path: "/bin/sh"},
		}}
	},
	"log-shipper": func() images.Spec {
		return images.Spec{Binaries: []images.Binary{{Package: module + "fluentbit", Path: "/fluent-bit/bin/fluent-bit"}}}
	},
}

// Pause is the Pod sandbox image, named name.
func Pause(name string) images.Spec {
	return images.Spec{Name: name, Binaries: []images.Binary{{Package: module + "pause", Path: "/pause"}}, User: "65535:65535"}
}

// App is the tests' application image, named name, run as uid 1000.
func App(name string) images.Spec {
	return images.Spec{Name: name, Binaries: []images.Binary{{Package: module + "app", Path: "/app"}}, User: "1000:1000"}
}
