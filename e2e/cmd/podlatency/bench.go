package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/e2e/internal/histo"
)

// bench is what the variants share: the cluster, what graft ships, and
// what to stop at the end.
type bench struct {
	c               *cluster.Cluster
	shipped         *cluster.Shipped
	dir             string
	conventionalBin string
	// sidecar is the default profile's first init container; a Pod that
	// holds it went through a variant's mutation.
	sidecar string
	// sidecarJSON is that container as the template renders it.
	sidecarJSON []byte
	// replayFor, if set, is the Pod the replay variant answers graft's
	// patch for (the corpus Pod otherwise).
	replayFor *corev1.Pod
	// admin scrapes graft's admin port. One client, so its keep-alive
	// connection is reused: graft admits 32 connections per client
	// address on that port, and a new client per scrape left one idle
	// connection behind each time, until the burst phase's quick scrapes
	// were refused.
	admin   *http.Client
	closers []func()
}

func newBench(c *cluster.Cluster, dir, conventionalBin string) (*bench, error) {
	shipped, err := cluster.LoadShipped("..")
	if err != nil {
		return nil, err
	}
	b := &bench{c: c, shipped: shipped, dir: dir, conventionalBin: conventionalBin,
		admin: &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}}
	b.onClose(b.admin.CloseIdleConnections)
	if b.sidecar, b.sidecarJSON, err = defaultSidecar(); err != nil {
		return nil, err
	}
	return b, nil
}

// onClose registers f to run when the measurement ends.
func (b *bench) onClose(f func()) { b.closers = append(b.closers, f) }

func (b *bench) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

// Metrics podlatency reads from kube-apiserver and from graft.
const (
	webhookDuration   = "apiserver_admission_webhook_admission_duration_seconds"
	pluginDuration    = "apiserver_admission_controller_admission_duration_seconds"
	mapCheckDuration  = "apiserver_mutating_admission_policy_check_duration_seconds"
	graftPatchBytes   = "graft_patch_bytes"
	maxMetricsBody    = 32 << 20
	vapPlugin         = "ValidatingAdmissionPolicy"
	webhookAdmitType  = "admit"
	pluginCheckedType = "validate"
)

// snapshot is the counters that matter, at one moment.
type snapshot struct {
	webhooks  map[string]histo.Histogram // mutating webhooks by name
	policies  map[string]histo.Histogram // MutatingAdmissionPolicy CEL by policy
	vapPlugin histo.Histogram            // the whole ValidatingAdmissionPolicy plugin, every Pod
	patch     histo.Histogram            // graft's patch sizes
}

// minus is what s observed since before.
func (s snapshot) minus(before snapshot) snapshot {
	d := snapshot{webhooks: map[string]histo.Histogram{}, policies: map[string]histo.Histogram{},
		vapPlugin: s.vapPlugin.Minus(before.vapPlugin),
		patch:     s.patch.Minus(before.patch)}
	for k, h := range s.webhooks {
		d.webhooks[k] = h.Minus(before.webhooks[k])
	}
	for k, h := range s.policies {
		d.policies[k] = h.Minus(before.policies[k])
	}
	return d
}

// plus adds the observations of two separate periods.
func (s snapshot) plus(o snapshot) snapshot {
	out := snapshot{webhooks: map[string]histo.Histogram{}, policies: map[string]histo.Histogram{},
		vapPlugin: s.vapPlugin.Plus(o.vapPlugin), patch: s.patch.Plus(o.patch)}
	for _, m := range []map[string]histo.Histogram{s.webhooks, o.webhooks} {
		for k, h := range m {
			out.webhooks[k] = out.webhooks[k].Plus(h)
		}
	}
	for _, m := range []map[string]histo.Histogram{s.policies, o.policies} {
		for k, h := range m {
			out.policies[k] = out.policies[k].Plus(h)
		}
	}
	return out
}

func (b *bench) scrape(ctx context.Context) (snapshot, error) {
	hc, token := b.c.APIServerHTTP()
	api, err := scrapeURL(ctx, hc, b.c.APIServerURL()+"/metrics", token)
	if err != nil {
		return snapshot{}, err
	}
	graft, err := scrapeURL(ctx, b.admin, "http://"+b.c.GraftAdminAddr()+"/metrics", "")
	if err != nil {
		return snapshot{}, err
	}
	s := snapshot{
		webhooks: byLabel(api[webhookDuration], "name", func(m *dto.Metric) bool { return histo.Label(m, "type") == webhookAdmitType }),
		policies: byLabel(api[mapCheckDuration], "policy", func(*dto.Metric) bool { return true }),
		vapPlugin: histo.FromFamily(api[pluginDuration], func(m *dto.Metric) bool {
			return histo.Label(m, "name") == vapPlugin && histo.Label(m, "type") == pluginCheckedType &&
				histo.Label(m, "operation") == "CREATE"
		}),
		patch: histo.FromFamily(graft[graftPatchBytes], func(*dto.Metric) bool { return true }),
	}
	return s, nil
}

// byLabel splits a histogram family by the value of label.
func byLabel(mf *dto.MetricFamily, label string, keep func(*dto.Metric) bool) map[string]histo.Histogram {
	out := map[string]histo.Histogram{}
	if mf == nil {
		return out
	}
	seen := map[string]bool{}
	for _, m := range mf.GetMetric() {
		seen[histo.Label(m, label)] = true
	}
	for v := range seen {
		out[v] = histo.FromFamily(mf, func(m *dto.Metric) bool { return histo.Label(m, label) == v && keep(m) })
	}
	return out
}

func scrapeURL(ctx context.Context, c *http.Client, url, token string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, maxMetricsBody))
	if err != nil {
		return nil, fmt.Errorf("parse metrics from %s: %w", url, err)
	}
	return mfs, nil
}
