package webhook

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/yaml"
)

// selector is a series selector of an alert: a metric name and its label
// matchers (=, != and =~; job, which Prometheus adds, aside).
type selector struct {
	expr, name string
	matchers   []matcher
}

type matcher struct {
	label, op, value string
}

var (
	selectorRE = regexp.MustCompile(`(graft_[a-z_]+_total)\{([^}]*)\}`)
	matcherRE  = regexp.MustCompile(`^\s*([a-z_]+)\s*(=~|!=|=)\s*"([^"]*)"\s*$`)
)

// alertCounterSelectors are the selectors of graft's own counters (job
// graft, the webhook) in the alert rules of deploy/components/monitoring.
func alertCounterSelectors(t *testing.T) []selector {
	t.Helper()
	data, err := os.ReadFile("../deploy/components/monitoring/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	var out []selector
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			for _, m := range selectorRE.FindAllStringSubmatch(r.Expr, -1) {
				s := selector{expr: r.Alert + ": " + m[0], name: m[1]}
				webhook := false
				for _, part := range strings.Split(m[2], ",") {
					mm := matcherRE.FindStringSubmatch(part)
					if mm == nil {
						t.Fatalf("%s: matcher %q: the test reads only = != and =~", r.Alert, part)
					}
					if mm[1] == "job" {
						webhook = mm[2] == "=" && mm[3] == "graft"
						continue
					}
					s.matchers = append(s.matchers, matcher{mm[1], mm[2], mm[3]})
				}
				if webhook {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

func (s selector) matches(name string, labels map[string]string) bool {
	if name != s.name {
		return false
	}
	for _, m := range s.matchers {
		v := labels[m.label]
		switch m.op {
		case "=":
			if v != m.value {
				return false
			}
		case "!=":
			if v == m.value {
				return false
			}
		case "=~":
			if !regexp.MustCompile(`^(?:` + m.value + `)$`).MatchString(v) {
				return false
			}
		}
	}
	return true
}

// TestAlertSeriesInitialised ties /metrics to the alerts: a fresh
// server's counters hold a zero series for every counter selector of
// graft's alerts (rate() and increase() need a sample before the first
// event to see it), and no other: a series appears when it first counts.
func TestAlertSeriesInitialised(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// As a server binds its configuration and opens its ports.
	m.bind([]string{"default", "2026-12"}, []string{"enabled", "mesh-proxy"}, []string{"mesh-proxy", "agent"})
	m.connCounters(portWebhook)
	m.connCounters(portAdmin)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	type series struct {
		name   string
		labels map[string]string
	}
	var counters []series
	for _, mf := range mfs {
		if mf.GetType() != dto.MetricType_COUNTER || !strings.HasPrefix(mf.GetName(), "graft_") {
			continue
		}
		for _, mt := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			counters = append(counters, series{mf.GetName(), labels})
		}
	}
	sels := alertCounterSelectors(t)
	if len(sels) < 5 {
		t.Fatalf("%d counter selectors in the alerts: the test reads too few", len(sels))
	}
	for _, s := range sels {
		found := false
		for _, c := range counters {
			found = found || s.matches(c.name, c.labels)
		}
		if !found {
			t.Errorf("%s: no series at start: the alert cannot see the first event (pre-initialise it in alertSeries)", s.expr)
		}
	}
	for _, c := range counters {
		used := false
		for _, s := range sels {
			used = used || s.matches(c.name, c.labels)
		}
		if !used {
			t.Errorf("%s%v exists at start, and no alert reads it: create it when it first counts", c.name, c.labels)
		}
	}
	// The API server sends graft Pod CREATEs only: no other operation's
	// series exists before it happens.
	for _, c := range counters {
		if op := c.labels["operation"]; op != "" && op != "CREATE" && op != "UNKNOWN" {
			t.Errorf("%s%v: a series for an operation graft is not sent", c.name, c.labels)
		}
	}
}

// A lazy series appears on its first count, and counts from there.
func TestLazyCounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"a"})
	reg.MustRegister(vec)
	c := newCounter(vec, "x_total", "b")
	if n := testCount(t, reg); n != 0 {
		t.Fatalf("%d series before the first count", n)
	}
	c.Inc()
	c.Inc()
	mfs, _ := reg.Gather()
	if len(mfs) != 1 || len(mfs[0].GetMetric()) != 1 || mfs[0].GetMetric()[0].GetCounter().GetValue() != 2 {
		t.Fatalf("after two counts: %v", mfs)
	}
}

func testCount(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		n += len(mf.GetMetric())
	}
	return n
}
