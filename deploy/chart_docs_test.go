package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// valuesOpaque are values whose contents are the user's data (a
// configuration, labels, resources): the README documents them as a whole.
var valuesOpaque = []string{
	"config.profiles", "config.server", "namespace.labels", "resources", "templates.extra", "audit.exporter.resources", "watchdog.resources",
	"monitoring.serviceMonitor.labels", "monitoring.prometheusRule.labels", "monitoring.dashboard.labels",
}

// TestChartReadmeDocumentsEveryValue: every value of values.yaml (each leaf,
// and each map of user data as a whole) has a row in the chart's README, so a new value cannot ship undocumented.
func TestChartReadmeDocumentsEveryValue(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			path := strings.TrimPrefix(prefix+"."+k, ".")
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 && !slices.Contains(valuesOpaque, path) {
				walk(path, sub)
				continue
			}
			paths = append(paths, path)
		}
	}
	walk("", values)
	if len(paths) < 20 {
		t.Fatalf("read only %d values", len(paths))
	}
	for _, p := range paths {
		if !strings.Contains(string(readme), "`"+p+"`") {
			t.Errorf("value %s is not in %s/README.md", p, chartDir)
		}
	}
}
