package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/internal/refdocs"
)

const (
	monitoringDir = "components/monitoring"
	runbooksDoc   = "../docs/runbooks.md"
	runbookBase   = "https://github.com/graftdev/graft/blob/main/docs/runbooks.md"
)

// ruleGroups is the spec of a PrometheusRule: a Prometheus rule file.
type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func (g ruleGroups) alerts() []rule {
	var out []rule
	for _, grp := range g.Groups {
		for _, r := range grp.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// prometheusRuleSpec returns the spec of the PrometheusRule in the YAML
// object y, as a rule file and decoded.
func prometheusRuleSpec(t *testing.T, y []byte) ([]byte, ruleGroups) {
	t.Helper()
	var pr struct {
		Kind string          `json:"kind"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(y, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.Kind != "PrometheusRule" || len(pr.Spec) == 0 {
		t.Fatalf("not a PrometheusRule with a spec: kind %q", pr.Kind)
	}
	var g ruleGroups
	if err := json.Unmarshal(pr.Spec, &g); err != nil {
		t.Fatal(err)
	}
	file, err := yaml.JSONToYAML(pr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return file, g
}

func componentRules(t *testing.T) ([]byte, ruleGroups) {
	t.Helper()
	y, err := os.ReadFile(filepath.Join(monitoringDir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return prometheusRuleSpec(t, y)
}

// alertTestFiles are the promtool unit tests of the component's rules:
// one evaluated every minute, one hourly for alerts that wait days.
var alertTestFiles = []string{"testdata/alerts_test.yaml", "testdata/alerts_week_test.yaml"}

// TestAlertRules: promtool accepts the rules, and the unit tests of
// alertTestFiles pass against them.
func TestAlertRules(t *testing.T) {
	promtool := tool(t, "GRAFT_PROMTOOL")
	file, _ := componentRules(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, nil, promtool, "check", "rules", "--lint=all", "--lint-fatal", filepath.Join(dir, "rules.yaml")); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, f := range alertTestFiles {
		tests, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(path, tests, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := run(t, nil, promtool, "test", "rules", path); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
}

// TestEveryAlertIsTested: each alert has a unit test in which it fires and
// one in which it stays quiet, so an alert added without tests, or one that
// could never fire or never clear, fails here.
func TestEveryAlertIsTested(t *testing.T) {
	_, groups := componentRules(t)
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, f := range alertTestFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tests struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string            `json:"alertname"`
					ExpAlerts []json.RawMessage `json:"exp_alerts"`
				} `json:"alert_rule_test"`
			} `json:"tests"`
		}
		// promtool checks the format; only what this test needs is read.
		if err := yaml.Unmarshal(data, &tests); err != nil {
			t.Fatal(err)
		}
		for _, tc := range tests.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else {
					quiet[a.Alertname] = true
				}
			}
		}
	}
	alerts := groups.alerts()
	if len(alerts) == 0 {
		t.Fatal("no alerts")
	}
	names := map[string]bool{}
	for _, a := range alerts {
		names[a.Alert] = true
		if !fires[a.Alert] {
			t.Errorf("%s: no test in which it fires", a.Alert)
		}
		if !quiet[a.Alert] {
			t.Errorf("%s: no test in which it stays quiet", a.Alert)
		}
	}
	for name := range fires {
		if !names[name] {
			t.Errorf("%v test %s, which is not an alert", alertTestFiles, name)
		}
	}
}

// TestEveryAlertHasARunbook: each alert says how bad it is, what happened,
// and links its own section of docs/runbooks.md.
func TestEveryAlertHasARunbook(t *testing.T) {
	_, groups := componentRules(t)
	doc, err := os.ReadFile(runbooksDoc)
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			headings[refdocs.Anchor(h)] = true
		}
	}
	seen := map[string]bool{}
	for _, a := range groups.alerts() {
		if seen[a.Alert] {
			t.Errorf("%s: two alerts of that name", a.Alert)
		}
		seen[a.Alert] = true
		if s := a.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical (page) or warning (ticket)", a.Alert, s)
		}
		if a.Annotations["summary"] == "" || a.Annotations["description"] == "" {
			t.Errorf("%s: no summary or description", a.Alert)
		}
		anchor := strings.ToLower(a.Alert)
		if want := runbookBase + "#" + anchor; a.Annotations["runbook_url"] != want {
			t.Errorf("%s: runbook_url %q, want %q", a.Alert, a.Annotations["runbook_url"], want)
		}
		if !headings[anchor] {
			t.Errorf("%s: docs/runbooks.md has no section \"## %s\"", a.Alert, a.Alert)
		}
	}
}

// selectorRE finds the label selectors of a query: a metric name and {
// (not Grafana's ${var}).
var selectorRE = regexp.MustCompile(`[A-Za-z0-9_:]\{`)

var thresholdRE = regexp.MustCompile(`>\s*([0-9.]+)\s*$`)

// threshold returns the number an alert's expression compares against last.
func threshold(t *testing.T, g ruleGroups, alert string) float64 {
	t.Helper()
	for _, a := range g.alerts() {
		if a.Alert != alert {
			continue
		}
		m := thresholdRE.FindStringSubmatch(strings.TrimSpace(a.Expr))
		if m == nil {
			t.Fatalf("%s: expression does not end in > <number>: %s", alert, a.Expr)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	t.Fatalf("no alert %s", alert)
	return 0
}

// TestAlertThresholdsFollowDefaults: the component's latency thresholds are
// what its comment says: 80% of graft's default budget, and half the
// shipped webhooks' timeout. The chart's default for the first is the same.
func TestAlertThresholdsFollowDefaults(t *testing.T) {
	_, g := componentRules(t)
	if got, want := threshold(t, g, "GraftLatencyNearBudget"), 0.8*config.DefaultBudget.Seconds(); math.Abs(got-want) > 1e-9 {
		t.Errorf("GraftLatencyNearBudget at %v s, want 80%% of the default budget, %v s", got, want)
	}
	mwc := one[admissionv1.MutatingWebhookConfiguration](t, kustomize(t, "base"), "MutatingWebhookConfiguration", "graft")
	timeout := float64(deref(mwc.Webhooks[0].TimeoutSeconds))
	if got := threshold(t, g, "GraftWebhookSlow"); got != timeout/2 {
		t.Errorf("GraftWebhookSlow at %v s, want half the webhooks' timeoutSeconds %v", got, timeout)
	}
	_, chart := chartRules(t, newHelm(t), "--set", "monitoring.prometheusRule.enabled=true")
	for _, alert := range []string{"GraftLatencyNearBudget", "GraftWebhookSlow"} {
		if got, want := threshold(t, chart, alert), threshold(t, g, alert); got != want {
			t.Errorf("with its default values the chart puts %s at %v, the component at %v", alert, got, want)
		}
	}
}

// chartRules renders the chart with args and returns its PrometheusRule's
// spec, as a rule file and decoded.
func chartRules(t *testing.T, h *helm, args ...string) ([]byte, ruleGroups) {
	t.Helper()
	rules := h.render(t, args...).find("PrometheusRule")
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules rendered with %v, want 1", len(rules), args)
	}
	return prometheusRuleSpec(t, rules[0].yaml)
}

// TestChartLatencyThresholdFollowsBudget: the chart puts
// GraftLatencyNearBudget at 80% of the budget graft answers within, as
// graft computes it from the configuration the chart renders (parsed by
// graft's own config package, so the chart's duration parsing is checked
// against Go's) and the webhooks' timeout; an explicit value wins.
func TestChartLatencyThresholdFollowsBudget(t *testing.T) {
	h := newHelm(t)
	for _, c := range []struct {
		name string
		args []string
		want float64 // 0: derived from the rendered configuration
	}{
		{name: "defaults"},
		{name: "500ms", args: []string{"--set", "config.server.budget=500ms"}},
		{name: "fraction", args: []string{"--set", "config.server.budget=.75s"}},
		{name: "compound", args: []string{"--set", "config.server.budget=1s250ms"}},
		{name: "microseconds", args: []string{"--set", "config.server.budget=800us"}},
		{name: "zero is the default", args: []string{"--set", "config.server.budget=0s"}},
		{name: "timeout binds", args: []string{"--set", "config.server.budget=5s", "--set", "webhook.timeoutSeconds=2"}},
		{name: "margin over the timeout", args: []string{"--set", "config.server.budget=5s", "--set", "webhook.timeoutSeconds=1", "--set", "config.server.timeoutMargin=1500ms"}},
		{name: "explicit", args: []string{"--set", "config.server.budget=500ms", "--set-json", "monitoring.prometheusRule.latencyThresholdSeconds=0.3"}, want: 0.3},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--set", "monitoring.prometheusRule.enabled=true"}, c.args...)
			out := h.render(t, args...)
			_, g := prometheusRuleSpec(t, out.find("PrometheusRule")[0].yaml)
			want := c.want
			if want == 0 {
				server := renderedConfig(t, out, release).Server
				if err := server.Default(); err != nil {
					t.Fatal(err)
				}
				mwc := one[admissionv1.MutatingWebhookConfiguration](t, out, "MutatingWebhookConfiguration", release)
				timeout := time.Duration(deref(mwc.Webhooks[0].TimeoutSeconds)) * time.Second
				// webhook/deadline.go: the smaller of the budget and the
				// timeout less the margin (half the timeout if none is left).
				left := timeout - server.TimeoutMargin.Duration
				if left <= 0 {
					left = timeout / 2
				}
				want = math.Round(0.8*min(server.Budget.Duration, left).Seconds()*1e6) / 1e6
			}
			if got := threshold(t, g, "GraftLatencyNearBudget"); math.Abs(got-want) > 1e-9 {
				t.Errorf("GraftLatencyNearBudget at %v, want %v", got, want)
			}
		})
	}
}

// TestChartAlertRules: the chart's rules for other values still pass
// promtool, with the release's job and the thresholds put in, and the
// unit tests of testdata/chart_alerts_test.yaml, in which the derived
// thresholds decide, pass against them.
func TestChartAlertRules(t *testing.T) {
	promtool := tool(t, "GRAFT_PROMTOOL")
	h := newHelm(t)
	out := h.render(t, "--values", filepath.Join(chartDir, "ci", "custom-values.yaml"))
	var found bool
	for _, o := range out.find("PrometheusRule") {
		found = true
		file, g := prometheusRuleSpec(t, o.yaml)
		dir := t.TempDir()
		path := filepath.Join(dir, "rules.yaml")
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := run(t, nil, promtool, "check", "rules", "--lint=all", "--lint-fatal", path); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		tests, err := os.ReadFile("testdata/chart_alerts_test.yaml")
		if err != nil {
			t.Fatal(err)
		}
		testsPath := filepath.Join(dir, "chart_alerts_test.yaml")
		if err := os.WriteFile(testsPath, tests, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := run(t, nil, promtool, "test", "rules", testsPath); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		// custom-values.yaml: nameOverride sidecars, budget 500ms, timeoutSeconds 5.
		if got := threshold(t, g, "GraftLatencyNearBudget"); got != 0.4 {
			t.Errorf("GraftLatencyNearBudget at %v, want 80%% of the values' 500ms budget", got)
		}
		if got := threshold(t, g, "GraftWebhookSlow"); got != 2.5 {
			t.Errorf("GraftWebhookSlow at %v, want half of timeoutSeconds 5", got)
		}
		for _, a := range g.alerts() {
			if strings.Contains(a.Expr, `job="graft"`) || strings.Contains(a.Expr, `job="graft-audit"`) || strings.Contains(a.Expr, `job="graft-watchdog"`) {
				t.Errorf("%s still selects the component's job: %s", a.Alert, a.Expr)
			}
		}
		for _, job := range []string{`job="graft-sidecars"`, `job="graft-sidecars-audit"`, `job="graft-sidecars-watchdog"`} {
			if !bytes.Contains(file, []byte(job)) {
				t.Errorf("no rule selects the release's %s", job)
			}
		}
	}
	if !found {
		t.Fatal("custom-values.yaml renders no PrometheusRule")
	}
}

// TestDashboard: the dashboard is Grafana JSON whose every panel queries
// the chosen Prometheus data source and says what it shows. (Its metric
// names are checked against real /metrics in the e2e suite.)
func TestDashboard(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(monitoringDir, "graft-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID          int    `json:"id"`
			Type        string `json:"type"`
			Title       string `json:"title"`
			Description string `json:"description"`
			GridPos     struct{ X, Y, W, H int }
			Datasource  struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr       string `json:"expr"`
				Datasource struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" {
		t.Error("the dashboard needs a uid and a title")
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	for _, v := range []string{"datasource", "cluster", "job", "webhook"} {
		if !vars[v] {
			t.Errorf("no variable %s", v)
		}
	}
	ids := map[int]bool{}
	queries := 0
	for _, p := range d.Panels {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if ids[p.ID] {
			t.Errorf("%s: id used twice", where)
		}
		ids[p.ID] = true
		if p.Title == "" {
			t.Errorf("%s: no title", where)
		}
		if p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("%s: wider than the 24-column grid", where)
		}
		if p.Type == "row" {
			continue
		}
		if p.Description == "" {
			t.Errorf("%s: no description", where)
		}
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("%s: data source %q, want ${datasource}", where, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no query", where)
		}
		for _, q := range p.Targets {
			queries++
			if strings.TrimSpace(q.Expr) == "" || q.Datasource.UID != "${datasource}" {
				t.Errorf("%s: a query without an expression or on another data source", where)
			}
			// One dashboard for many clusters: every selector filters on
			// the cluster variable.
			if n, c := len(selectorRE.FindAllString(q.Expr, -1)), strings.Count(q.Expr, `{cluster=~"$cluster"`); n == 0 || n != c {
				t.Errorf("%s: %d of the %d selectors of %s filter on cluster=~\"$cluster\"", where, c, n, q.Expr)
			}
		}
	}
	if queries == 0 {
		t.Fatal("no queries")
	}
}
