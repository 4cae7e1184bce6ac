package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/valyala/fasthttp"
)

// maxResponseBytes bounds what a response may be; the API server accepts
// reviews of a few MiB.
const maxResponseBytes = 16 << 20

// Run sends cfg's requests and measures the answers. It checks each distinct
// request once fully before measuring, warms up, then runs until Duration
// or MaxRequests or ctx ends. An error means no measurement was possible
// (bad config, server unreachable); failed requests are counted in Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.URL) // validated
	// A write buffer that holds a whole request sends it as one TLS record
	// in one syscall, as the API server does; the default 4 KiB splits it.
	largest := 0
	for _, q := range cfg.Requests {
		largest = max(largest, len(q.Body))
	}
	client := &fasthttp.HostClient{
		WriteBufferSize:          min(largest+4096, 1<<20),
		Addr:                     u.Host,
		IsTLS:                    true,
		TLSConfig:                cfg.TLS,
		MaxConns:                 cfg.Concurrency + 1,
		ReadTimeout:              cfg.Timeout,
		WriteTimeout:             cfg.Timeout,
		MaxResponseBodySize:      maxResponseBytes,
		MaxIdleConnDuration:      time.Minute,
		NoDefaultUserAgentHeader: true,
	}
	defer client.CloseIdleConnections()

	r := &runner{cfg: cfg, client: client, hist: newHist(), verify: make(chan sample, 256)}
	if err := r.preflight(); err != nil {
		return nil, err
	}
	verified := make(chan struct{})
	go r.verifier(verified)
	if cfg.Warmup > 0 {
		warm := cfg
		warm.Mode, warm.Duration, warm.MaxRequests, warm.Progress = Closed, cfg.Warmup, 0, nil
		w := &runner{cfg: warm, client: client, hist: newHist(), verify: nil}
		w.measure(ctx)
	}
	if cfg.BeforeMeasure != nil {
		cfg.BeforeMeasure()
	}
	r.measure(ctx)
	if cfg.AfterMeasure != nil {
		cfg.AfterMeasure()
	}
	close(r.verify)
	<-verified
	return r.result(), nil
}

type sample struct {
	req  *Request
	body []byte
}

type runner struct {
	cfg    Config
	client *fasthttp.HostClient

	tickets  atomic.Int64
	done     atomic.Int64
	failed   atomic.Int64
	ok       atomic.Int64
	errs     [numErrorKinds]atomic.Int64
	respSize atomic.Int64
	checked  atomic.Int64
	patched  atomic.Int64

	mu       sync.Mutex
	hist     *hdrhistogram.Histogram
	firstErr string

	verify  chan sample // nil during warmup
	start   time.Time
	lastEnd atomic.Int64 // unix nanos of the last answer
	unsent  int64
}

// preflight sends each distinct request once and checks its answer fully.
func (r *runner) preflight() error {
	req, resp := r.newExchange()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for _, q := range r.cfg.Requests {
		req.SetBodyRaw(q.Body)
		if err := r.client.DoTimeout(req, resp, r.cfg.Timeout); err != nil {
			return fmt.Errorf("load: preflight request to %s: %w", r.cfg.URL, err)
		}
		if resp.StatusCode() != fasthttp.StatusOK {
			r.fail(ErrStatus, fmt.Errorf("preflight: HTTP %d: %.200s", resp.StatusCode(), resp.Body()))
			continue
		}
		r.check(q, resp.Body())
	}
	return nil
}

func (r *runner) newExchange() (*fasthttp.Request, *fasthttp.Response) {
	req := fasthttp.AcquireRequest()
	req.SetRequestURI(r.cfg.URL)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	return req, fasthttp.AcquireResponse()
}

func (r *runner) check(q *Request, body []byte) {
	v := FullCheck(q, body)
	r.checked.Add(1)
	if v.Err != nil {
		r.fail(v.Kind, v.Err)
		return
	}
	if v.Patched {
		r.patched.Add(1)
	}
}

func (r *runner) fail(k ErrorKind, err error) {
	r.errs[k].Add(1)
	r.failed.Add(1)
	r.mu.Lock()
	if r.firstErr == "" {
		r.firstErr = k.String() + ": " + err.Error()
	}
	r.mu.Unlock()
}

// verifier fully checks sampled responses off the timing path.
func (r *runner) verifier(done chan<- struct{}) {
	defer close(done)
	for s := range r.verify {
		r.check(s.req, s.body)
	}
}

func (r *runner) measure(ctx context.Context) {
	c := r.cfg
	r.start = time.Now()
	end := r.start.Add(c.Duration)
	stop, finished := make(chan struct{}), make(chan struct{})
	if c.Progress != nil {
		go progress(c.Progress, c.Label, r.start, &r.done, &r.failed, stop, finished)
	} else {
		close(finished)
	}
	var wg sync.WaitGroup
	for range c.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.Mode == Open {
				r.openWorker(ctx, end, end.Add(c.Drain))
			} else {
				r.closedWorker(ctx, end)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-finished
	if c.Mode == Open {
		scheduled := int64(math.Ceil(c.Duration.Seconds() * c.Rate))
		if c.MaxRequests > 0 && scheduled > c.MaxRequests {
			scheduled = c.MaxRequests
		}
		if sent := r.done.Load(); sent < scheduled && ctx.Err() == nil {
			r.unsent = scheduled - sent
		}
	}
}

func (r *runner) closedWorker(ctx context.Context, end time.Time) {
	req, resp := r.newExchange()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for ctx.Err() == nil {
		i := r.tickets.Add(1) - 1
		if r.cfg.MaxRequests > 0 && i >= r.cfg.MaxRequests {
			return
		}
		t0 := time.Now()
		if !t0.Before(end) {
			return
		}
		r.exchange(req, resp, r.cfg.Requests[i%int64(len(r.cfg.Requests))], t0)
	}
}

func (r *runner) openWorker(ctx context.Context, end, hardStop time.Time) {
	req, resp := r.newExchange()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	interval := float64(time.Second) / r.cfg.Rate
	for ctx.Err() == nil {
		i := r.tickets.Add(1) - 1
		if r.cfg.MaxRequests > 0 && i >= r.cfg.MaxRequests {
			return
		}
		intended := r.start.Add(time.Duration(float64(i) * interval))
		if !intended.Before(end) {
			return
		}
		now := time.Now()
		if now.After(hardStop) {
			return
		}
		if d := intended.Sub(now); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		r.exchange(req, resp, r.cfg.Requests[i%int64(len(r.cfg.Requests))], intended)
	}
}

// exchange sends q and records the latency from t0.
func (r *runner) exchange(req *fasthttp.Request, resp *fasthttp.Response, q *Request, t0 time.Time) {
	req.SetBodyRaw(q.Body)
	err := r.client.DoTimeout(req, resp, r.cfg.Timeout)
	t1 := time.Now()
	n := r.done.Add(1)
	r.lastEnd.Store(t1.UnixNano())
	if err != nil {
		if errors.Is(err, fasthttp.ErrTimeout) {
			err = fmt.Errorf("timeout after %s: %w", r.cfg.Timeout, err)
		}
		r.fail(ErrTransport, err)
		return
	}
	us := t1.Sub(t0).Microseconds()
	r.mu.Lock()
	_ = r.hist.RecordValue(min(max(us, histMinUS), histMaxUS))
	r.mu.Unlock()
	body := resp.Body()
	r.respSize.Add(int64(len(body)))
	if k, ok := quickCheck(q, resp.StatusCode(), body); !ok {
		r.fail(k, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode(), body))
		return
	}
	r.ok.Add(1)
	if r.verify != nil && n%r.cfg.SampleEvery == 0 {
		select {
		case r.verify <- sample{req: q, body: append([]byte(nil), body...)}:
		default: // the verifier is busy: skip this sample rather than wait
		}
	}
}

func (r *runner) result() *Result {
	res := &Result{
		Mode:        r.cfg.Mode,
		Concurrency: r.cfg.Concurrency,
		Requests:    r.done.Load(),
		Errors:      map[string]int64{},
		Unsent:      r.unsent,
		Latency:     r.hist,
		Checked:     r.checked.Load(),
		Patched:     r.patched.Load(),
		FirstError:  r.firstErr,
	}
	// A sampled check may fail a request that passed the quick check.
	res.OK = r.ok.Load()
	if r.cfg.Mode == Open {
		res.Rate = r.cfg.Rate
	}
	if last := r.lastEnd.Load(); last > 0 {
		res.Elapsed = time.Unix(0, last).Sub(r.start)
	}
	if n := r.done.Load(); n > 0 {
		res.RespBytes = float64(r.respSize.Load()) / float64(n)
	}
	for k := range numErrorKinds {
		if v := r.errs[k].Load(); v > 0 {
			res.Errors[k.String()] = v
		}
	}
	return res
}
