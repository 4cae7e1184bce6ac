package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"golang.org/x/sync/semaphore"
)

// Request bodies are read by the handler, not by fasthttp: fasthttp
// v1.74.0, reading a body itself, allocates the Content-Length a request
// declares as soon as its headers arrive (appendBodyFixedSize), so 60
// connections each declaring 7 MiB and sending one byte held 480 MiB. The
// webhook server streams bodies instead (StreamRequestBody): fasthttp
// reads the headers and the first 8 KiB of the body, and the handler
// reads the rest into a buffer that grows as bytes arrive, taking each
// growth from a budget of bytes shared by all requests
// (server.maxBodyBytesInFlight). What a body holds is then at most twice
// what its client has sent, and all bodies together at most the budget.
// A request that cannot get its bytes within its time is refused with
// 503 and its connection closed.

const (
	// bodyPrefetch is what fasthttp reads of a body with its headers
	// (readBodyWithStreaming). Smaller bodies take nothing from the
	// budget: they are bounded by the number of connections.
	bodyPrefetch = 8 << 10
	// bodyChunk is a larger body's first buffer; the buffers of this
	// size are pooled.
	bodyChunk = 64 << 10
)

var (
	smallBodies = sync.Pool{New: func() any { b := make([]byte, 0, bodyPrefetch); return &b }}
	chunkBodies = sync.Pool{New: func() any { b := make([]byte, 0, bodyChunk); return &b }}
)

// bodyBudget is the bytes request bodies may hold at once.
type bodyBudget struct {
	sem  *semaphore.Weighted
	max  int64
	held prometheus.Gauge
}

func newBodyBudget(max int64, m *metrics) *bodyBudget {
	return &bodyBudget{sem: semaphore.NewWeighted(max), max: max, held: m.bodyBytes}
}

// take gets n bytes, waiting for them until deadline.
func (b *bodyBudget) take(n int64, deadline time.Time) bool {
	if !b.sem.TryAcquire(n) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := b.sem.Acquire(ctx, n)
		cancel()
		if err != nil {
			return false
		}
	}
	b.held.Add(float64(n))
	return true
}

func (b *bodyBudget) give(n int64) {
	if n > 0 {
		b.sem.Release(n)
		b.held.Sub(float64(n))
	}
}

// requestBody is one request's body and the budget it holds.
type requestBody struct {
	b []byte
	// held is what it took from the budget; pool and ptr, the pool b
	// returns to and the pointer it came in.
	held int64
	pool *sync.Pool
	ptr  *[]byte
}

// errBodyBudget: the body could not get its bytes in time.
var errBodyBudget = errors.New("request bodies in flight are at their limit")

// readBody reads the request's Content-Length bytes of body, waiting for
// budget no later than deadline. The caller checks the length against
// maxBodyBytes first and releases the body once the engine is done.
func (b *bodyBudget) readBody(ctx *fasthttp.RequestCtx, deadline time.Time) (requestBody, error) {
	n := ctx.Request.Header.ContentLength()
	stream := ctx.RequestBodyStream()
	if n <= 0 || stream == nil {
		// No body, or one fasthttp read already (a server without
		// streaming: the admin port's routes never get here).
		return requestBody{b: ctx.PostBody()}, nil
	}
	var rb requestBody
	if n <= bodyPrefetch {
		rb.pool = &smallBodies
	} else {
		if !b.take(bodyChunk, deadline) {
			return rb, errBodyBudget
		}
		rb.held, rb.pool = bodyChunk, &chunkBodies
	}
	rb.ptr = rb.pool.Get().(*[]byte)
	rb.b = (*rb.ptr)[:0]
	for len(rb.b) < n {
		if len(rb.b) == cap(rb.b) {
			if err := b.grow(&rb, n, deadline); err != nil {
				return rb, err
			}
		}
		m, err := stream.Read(rb.b[len(rb.b):min(cap(rb.b), n)])
		rb.b = rb.b[:len(rb.b)+m]
		if err != nil {
			if errors.Is(err, io.EOF) && len(rb.b) == n {
				break
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return rb, fmt.Errorf("reading the body (%d of %d bytes): %w", len(rb.b), n, err)
		}
	}
	return rb, nil
}

// grow doubles rb's buffer, up to n bytes, taking the bytes it adds from
// the budget before it is made. (The old buffer, garbage once copied, is
// not counted while it is copied: counting it would make a body over half
// the budget wait for its own bytes.)
func (b *bodyBudget) grow(rb *requestBody, n int, deadline time.Time) error {
	size := min(2*cap(rb.b), n)
	if !b.take(int64(size)-rb.held, deadline) {
		return errBodyBudget
	}
	grown := make([]byte, len(rb.b), size)
	copy(grown, rb.b)
	if rb.pool != nil {
		*rb.ptr = rb.b[:0]
		rb.pool.Put(rb.ptr)
	}
	rb.b, rb.held, rb.pool, rb.ptr = grown, int64(size), nil, nil
	return nil
}

// release gives the body's bytes back to the budget and its buffer back
// to its pool. Nothing may use the body afterwards.
func (b *bodyBudget) release(rb *requestBody) {
	b.give(rb.held)
	if rb.pool != nil {
		*rb.ptr = rb.b[:0]
		rb.pool.Put(rb.ptr)
	}
	*rb = requestBody{}
}
