package hostile

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/internal/names"
)

// AllTemplates selects every built-in template the shipped default
// profile allows.
const AllTemplates = "mesh-proxy,secrets-agent,otel-agent,log-shipper"

// ManyContainersReview is a Pod CREATE with n small app containers that
// asks for every template: what any Pod author in an opted-in namespace
// can send, each container getting every template's env vars and mounts.
func ManyContainersReview(n int) []byte {
	containers := make([]any, n)
	for i := range containers {
		containers[i] = map[string]any{"name": "c" + strconv.Itoa(i), "image": "nginx"}
	}
	pod := map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": map[string]any{
			"name":        "many",
			"namespace":   "shop",
			"annotations": map[string]any{names.Templates: AllTemplates},
		},
		"spec": map[string]any{"containers": containers},
	}
	return corpus.Marshal("", "7c5e2b1a-0000-4000-8000-00000000beef", "CREATE", "shop", pod)
}

// apiServerClient is configured as kube-apiserver's webhook client:
// HTTP/1.1 only, keep-alive, at most 25 idle connections per host, 90 s
// idle timeout, no TLS session cache (every new connection a full
// handshake). Its address is 127.0.0.1.
func apiServerClient(tc *tls.Config) *http.Client {
	tc = tc.Clone()
	tc.NextProtos = []string{"http/1.1"}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     tc,
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DialContext:         (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}).DialContext,
	}}
}

// Calls sums one stream of reviews.
type Calls struct {
	Name string `json:"name"`
	// Bytes is the request body's size.
	Bytes int `json:"bytes"`
	// Sent, Answered (200 with a review for the request's uid), Late
	// (answered after ?timeout= plus the grace) and Failed (no answer, an
	// HTTP error or not a review).
	Sent     int `json:"sent"`
	Answered int `json:"answered"`
	Late     int `json:"late"`
	Failed   int `json:"failed"`
	// Patched counts answers with a patch; Warned, answers with warnings
	// (the failure mode's, when graft could not inject in its budget).
	Patched int `json:"patched"`
	Warned  int `json:"warned"`
	// Latencies in milliseconds.
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
	// FirstFailure says what the first failed call met.
	FirstFailure string `json:"first_failure,omitempty"`
	// Warning is the first warning graft answered with.
	Warning string `json:"warning,omitempty"`

	mu  sync.Mutex
	lat []float64
}

// stream posts body as the API server would, every interval (0: back to
// back), until ctx ends: each call bounded by timeout, judged late past
// timeout+grace.
func (c *Calls) stream(ctx context.Context, client *http.Client, url string, body []byte, timeout, grace, interval time.Duration) {
	c.Bytes = len(body)
	var uid struct {
		Request struct {
			UID string `json:"uid"`
		} `json:"request"`
	}
	_ = json.Unmarshal(body, &uid)
	for ctx.Err() == nil {
		start := time.Now()
		c.call(client, url, body, uid.Request.UID, timeout, grace)
		if interval > 0 {
			sleep(ctx, interval-time.Since(start))
		}
	}
}

func (c *Calls) call(client *http.Client, url string, body []byte, uid string, timeout, grace time.Duration) {
	// Waited on a little past the deadline, so that a late answer is
	// measured rather than cut off.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Second)
	defer cancel()
	start := time.Now()
	// How the call got its connection, for a failure's message.
	var conn httptrace.GotConnInfo
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conn = i }})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		panic(err) // the URL is the bench's own
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	var out []byte
	if err == nil {
		out, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
	}
	took := time.Since(start)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Sent++
	c.lat = append(c.lat, float64(took.Microseconds())/1000)
	fail := func(why string) {
		c.Failed++
		if c.FirstFailure == "" {
			c.FirstFailure = fmt.Sprintf("%s after %s (connection reused %v, idle %s before)",
				why, took.Round(time.Millisecond), conn.Reused, conn.IdleTime.Round(time.Millisecond))
		}
	}
	switch {
	case err != nil:
		fail(err.Error())
		return
	case resp.StatusCode != http.StatusOK:
		fail(fmt.Sprintf("HTTP %d: %.200s", resp.StatusCode, out))
		return
	}
	var review struct {
		Response struct {
			UID      string   `json:"uid"`
			Patch    string   `json:"patch"`
			Warnings []string `json:"warnings"`
		} `json:"response"`
	}
	if err := json.Unmarshal(out, &review); err != nil || review.Response.UID != uid {
		fail(fmt.Sprintf("not a review for uid %s: %.200s", uid, out))
		return
	}
	c.Answered++
	if took > timeout+grace {
		c.Late++
	}
	if review.Response.Patch != "" {
		c.Patched++
	}
	if len(review.Response.Warnings) > 0 {
		c.Warned++
		if c.Warning == "" {
			c.Warning = review.Response.Warnings[0]
		}
	}
}

// finish computes the percentiles.
func (c *Calls) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	slices.Sort(c.lat)
	if n := len(c.lat); n > 0 {
		c.P50MS, c.P99MS, c.MaxMS = c.lat[n/2], c.lat[min(n-1, n*99/100)], c.lat[n-1]
	}
}

// Probes sums the kubelet's probes of one path.
type Probes struct {
	Path     string `json:"path"`
	Sent     int    `json:"sent"`
	Answered int    `json:"answered"`
	// MaxMS is the slowest answer, in milliseconds.
	MaxMS        float64 `json:"max_ms"`
	FirstFailure string  `json:"first_failure,omitempty"`
}

// probe gets url every interval until ctx ends, each on a new connection
// (the kubelet's HTTP probes keep none alive) bounded by timeout; a probe
// is answered by a 200 within it.
func (p *Probes) probe(ctx context.Context, url string, timeout, interval time.Duration) {
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	for ctx.Err() == nil {
		start := time.Now()
		resp, err := client.Get(url)
		took := time.Since(start)
		p.Sent++
		switch {
		case err != nil:
			p.fail(err.Error())
		case resp.StatusCode != http.StatusOK:
			resp.Body.Close()
			p.fail("HTTP " + strconv.Itoa(resp.StatusCode))
		default:
			resp.Body.Close()
			p.Answered++
			p.MaxMS = max(p.MaxMS, float64(took.Microseconds())/1000)
		}
		sleep(ctx, interval-took)
	}
}

func (p *Probes) fail(why string) {
	if p.FirstFailure == "" {
		p.FirstFailure = strings.TrimSpace(why)
	}
}
