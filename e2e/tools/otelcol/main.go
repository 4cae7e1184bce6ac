// Command otelcol is the OpenTelemetry Collector with exactly the
// components graft's otel-agent template configures: the otlp receiver,
// the memory_limiter and batch processors, the otlp_grpc exporter and the
// health_check extension, reading its configuration from yaml:, env: and
// file: URIs. The templates' tests run its `validate` command on every
// rendered configuration, and the real-node tests run it as the sidecar.
//
// What the collector's builder (ocb) would generate for the same list,
// written out so that go.mod and go.sum pin every module.
package main

import (
	"fmt"
	"os"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/healthcheckextension"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/processor/memorylimiterprocessor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

// version is the collector release this module pins (go.mod); the Makefile
// sets it from there.
var version = "dev"

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol",
			Description: "OpenTelemetry Collector with the components of graft's otel-agent template",
			Version:     version,
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					envprovider.NewFactory(),
					fileprovider.NewFactory(),
					yamlprovider.NewFactory(),
				},
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		// cobra has printed the error.
		os.Exit(1)
	}
}

func components() (otelcol.Factories, error) {
	f := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return f, fmt.Errorf("receivers: %w", err)
	}
	if f.Processors, err = otelcol.MakeFactoryMap[processor.Factory](memorylimiterprocessor.NewFactory(), batchprocessor.NewFactory()); err != nil {
		return f, fmt.Errorf("processors: %w", err)
	}
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](otlpexporter.NewFactory()); err != nil {
		return f, fmt.Errorf("exporters: %w", err)
	}
	if f.Extensions, err = otelcol.MakeFactoryMap[extension.Factory](healthcheckextension.NewFactory()); err != nil {
		return f, fmt.Errorf("extensions: %w", err)
	}
	return f, nil
}
