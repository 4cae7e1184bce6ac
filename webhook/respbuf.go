package webhook

import "sync"

// respBuf is a pooled response buffer.
//
// Lifetime: the handler takes one from the pool and the engine appends the
// response to b. The handler hands those bytes to fasthttp without a copy
// (Response.SetBodyRaw) and parks the respBuf in the request's user
// values. fasthttp writes the response after the handler returns, then
// resets the request, which closes its user values: Close empties the
// buffer and returns it to the pool. So between the handler's return and
// that reset the bytes belong to fasthttp, and nothing else touches them.
type respBuf struct {
	b    []byte
	pool *respPool
}

// respBufKey is the user-value key the buffer is parked under.
const respBufKey = "graft.respBuf"

// Close returns the buffer to its pool (fasthttp calls it on reset).
func (rb *respBuf) Close() error {
	rb.pool.put(rb)
	return nil
}

// maxPooledResp keeps rare huge responses from pinning memory in the pool.
const maxPooledResp = 1 << 20

type respPool struct{ p sync.Pool }

func newRespPool() *respPool {
	rp := &respPool{}
	rp.p.New = func() any { return &respBuf{b: make([]byte, 0, 16<<10), pool: rp} }
	return rp
}

func (rp *respPool) get() *respBuf { return rp.p.Get().(*respBuf) }

// put empties rb and returns it to the pool.
func (rp *respPool) put(rb *respBuf) {
	if cap(rb.b) > maxPooledResp {
		rb.b = nil
	}
	rb.b = rb.b[:0]
	rp.p.Put(rb)
}
