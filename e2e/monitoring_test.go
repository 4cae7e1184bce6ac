package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const monitoringDir = "deploy/components/monitoring"

// targetLabels are added by Prometheus and the Prometheus Operator to every
// series they scrape, and cluster by a Prometheus's external labels or its
// remote store; no /metrics shows them.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "endpoint", "container", "cluster"}

// prometheusMetrics are series Prometheus makes itself.
var prometheusMetrics = map[string]bool{"up": true}

// TestMonitoringNamesExist: every metric the alert rules and the dashboard
// query, and every label they select or group by, exists in what graft's
// /metrics, the API server's /metrics, the audit exporter's /metrics
// (`graft audit --serve`) and graft watchdog's expose, scraped here from the
// real processes. A
// misspelt or removed name fails.
func TestMonitoringNamesExist(t *testing.T) {
	probeWebhookFailures(t)
	exposed := map[string]map[string]bool{}
	hc := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}
	// graft's counters appear as they first count, and the exporter's
	// graft_audit_pods once a Pod is classified: one Pod of an opted-in
	// namespace (graft injects it, so it is current).
	ns := optedIn(t, "e2e-metrics-audit")
	audited := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "audited"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}}
	if _, err := env.client.CoreV1().Pods(ns).Create(t.Context(), audited, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A series appears when graft first counts it: a Pod graft skips
	// (host network) brings graft_skips_total, which the dashboard reads.
	skipped := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "skipped"},
		Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}}
	if _, err := env.client.CoreV1().Pods(ns).Create(t.Context(), skipped, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	addSeries(exposed, scrape(t, hc, "http://"+env.cluster.GraftAdminAddr()+"/metrics", ""))
	apiClient, token := env.cluster.APIServerHTTP()
	addSeries(exposed, scrape(t, apiClient, env.cluster.APIServerURL()+"/metrics", token))
	audit := startAuditExporter(t, writeKubeconfig(t), "-n", ns)
	addSeries(exposed, scrape(t, hc, audit.url+"/metrics", ""))
	// graft watchdog's, with a grace long enough that it restarts nothing.
	watchdog := startWatchdog(t, "e2e-metrics-watchdog", "--grace", "24h")
	addSeries(exposed, scrape(t, hc, "http://"+watchdog+"/metrics", ""))

	exprs := ruleExpressions(t)
	dash := dashboardExpressions(t, exposed)
	if len(exprs) == 0 || len(dash) == 0 {
		t.Fatalf("%d rule and %d dashboard expressions: want some of each", len(exprs), len(dash))
	}
	p := parser.NewParser(parser.Options{})
	checked := 0
	for _, e := range append(exprs, dash...) {
		expr, err := p.ParseExpr(e.expr)
		if err != nil {
			t.Errorf("%s: %v\n%s", e.where, err, e.expr)
			continue
		}
		for _, problem := range checkNames(expr, exposed) {
			t.Errorf("%s: %s\n%s", e.where, problem, e.expr)
		}
		checked++
	}
	t.Logf("%d expressions checked against %d exposed series names", checked, len(exposed))
}

type expression struct{ where, expr string }

// addSeries records the series names a scrape exposes (a histogram's as
// _bucket, _sum and _count) and the label names each carries.
func addSeries(exposed map[string]map[string]bool, mfs map[string]*dto.MetricFamily) {
	for name, mf := range mfs {
		names := []string{name}
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names = []string{name + "_bucket", name + "_sum", name + "_count"}
		case dto.MetricType_SUMMARY:
			names = []string{name, name + "_sum", name + "_count"}
		}
		for _, n := range names {
			if exposed[n] == nil {
				exposed[n] = map[string]bool{}
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					exposed[n][l.GetName()] = true
				}
			}
			if strings.HasSuffix(n, "_bucket") {
				exposed[n]["le"] = true
			}
		}
	}
}

// checkNames lists the metric names expr selects that are not exposed, and
// the label names it matches or groups by that none of its metrics carry.
func checkNames(expr parser.Expr, exposed map[string]map[string]bool) []string {
	var problems []string
	have := map[string]bool{}
	for _, l := range targetLabels {
		have[l] = true
	}
	var grouping []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			name := n.Name
			for _, m := range n.LabelMatchers {
				if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			if prometheusMetrics[name] {
				return nil
			}
			labelsOf, ok := exposed[name]
			if !ok {
				problems = append(problems, fmt.Sprintf("metric %s is not exposed by graft or the API server", name))
				return nil
			}
			for l := range labelsOf {
				have[l] = true
			}
			for _, m := range n.LabelMatchers {
				if m.Name != model.MetricNameLabel && !labelsOf[m.Name] && !slices.Contains(targetLabels, m.Name) {
					problems = append(problems, fmt.Sprintf("metric %s has no label %s", name, m.Name))
				}
			}
		case *parser.AggregateExpr:
			grouping = append(grouping, n.Grouping...)
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				grouping = append(grouping, n.VectorMatching.MatchingLabels...)
			}
		}
		return nil
	})
	for _, l := range grouping {
		if !have[l] {
			problems = append(problems, fmt.Sprintf("groups by label %s, which none of its metrics carries", l))
		}
	}
	return problems
}

// ruleExpressions are the alert rules' expressions.
func ruleExpressions(t *testing.T) []expression {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, monitoringDir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert, Record, Expr string
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatal(err)
	}
	var out []expression
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			out = append(out, expression{where: "rule " + r.Alert + r.Record, expr: r.Expr})
		}
	}
	return out
}

// grafanaVars are the dashboard's variables, and what a query reads once
// Grafana has put their values in.
var grafanaVars = map[string]string{
	"__rate_interval": "5m",
	"__interval":      "1m",
	"__range":         "1h",
	"job":             "graft",
	"webhook":         ".+[.]inject[.]graft[.]dev",
	"cluster":         ".*",
}

var (
	grafanaVarRE  = regexp.MustCompile(`\$\{?(\w+)\}?`)
	labelValuesRE = regexp.MustCompile(`^label_values\((\w+)(\{[^}]*\})?,\s*(\w+)\)$`)
	errUnknownVar = errors.New("unknown dashboard variable")
)

// dashboardExpressions are the dashboard's queries with its variables
// filled in. A variable query (label_values) is checked here.
func dashboardExpressions(t *testing.T, exposed map[string]map[string]bool) []expression {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, monitoringDir, "graft-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValuesRE.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(metric{selector}, label)", v.Name, v.Definition)
		} else if !exposed[m[1]][m[3]] && !slices.Contains(targetLabels, m[3]) {
			t.Errorf("variable %s: %s has no label %s", v.Name, m[1], m[3])
		} else if exposed[m[1]] == nil {
			t.Errorf("variable %s: metric %s is not exposed", v.Name, m[1])
		}
	}
	var out []expression
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatal(err)
			}
			for _, q := range p.Targets {
				expr, err := fillVars(q.Expr)
				if err != nil {
					t.Errorf("panel %q: %v", p.Title, err)
					continue
				}
				out = append(out, expression{where: fmt.Sprintf("panel %q", p.Title), expr: expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

func fillVars(expr string) (string, error) {
	var err error
	out := grafanaVarRE.ReplaceAllStringFunc(expr, func(v string) string {
		name := grafanaVarRE.FindStringSubmatch(v)[1]
		val, ok := grafanaVars[name]
		if !ok {
			err = fmt.Errorf("%w $%s", errUnknownVar, name)
		}
		return val
	})
	return out, err
}

// probeWebhookFailures makes the API server count a fail-open and a
// rejection, so that the series of those counters exist: two webhooks at
// an address nothing listens on, one failing open (Ignore), one closed
// (Fail), each for the Pods of this test's namespace carrying its label.
func probeWebhookFailures(t *testing.T) {
	t.Helper()
	const label = "e2e.graft.dev/probe"
	ns := newNamespace(t, "e2e-metrics-probe", nil)
	unreachable := "https://127.0.0.1:1/unreachable"
	hook := func(name string, policy admissionv1.FailurePolicyType) admissionv1.MutatingWebhook {
		w := scopedGraftWebhook(name+".probe.e2e.graft.dev", ns, "")
		w.ClientConfig.URL = &unreachable
		w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{label: name}}
		w.FailurePolicy = &policy
		return w
	}
	registerWebhooks(t, "e2e-metrics-probe", hook("fail-open", admissionv1.Ignore), hook("reject", admissionv1.Fail))
	pod := func(which string) error {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Labels: map[string]string{label: which}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
		}
		_, err := env.client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	// The API server picks the configuration up within a moment: the
	// closed webhook refusing is the sign. The minute only bounds a hang,
	// as WaitInjecting's does.
	deadline := time.Now().Add(time.Minute)
	for pod("reject") == nil {
		if time.Now().After(deadline) {
			t.Fatal("the probe webhooks never took effect")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := pod("fail-open"); err != nil {
		t.Fatalf("a Pod through the failing-open probe webhook: %v", err)
	}
}
