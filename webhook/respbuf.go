package webhook

import "sync"

// respBuf carries a response buffer through a sync.Pool (a pointer, so
// Put does not allocate).
//
// Lifetime: the handler takes a respBuf, the engine appends the response
// to b, and the handler hands those bytes to fasthttp with
// Response.SwapBody, which gives back the response's previous body buffer.
// That previous buffer, emptied, goes back into the pool. So the bytes the
// engine wrote belong to fasthttp from the swap on (it writes them after
// the handler returns and reuses the buffer for a later response), and the
// handler never touches them again.
type respBuf struct{ b []byte }

// maxPooledResp keeps rare huge responses from pinning memory in the pool.
const maxPooledResp = 1 << 20

type respPool struct{ p sync.Pool }

func newRespPool() *respPool {
	return &respPool{p: sync.Pool{New: func() any { return &respBuf{b: make([]byte, 0, 16<<10)} }}}
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
