package webhook

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/valyala/fasthttp"
)

// graft refuses, with 400 and the reason, HTTP that no API server sends
// and that fasthttp would read leniently or not at all:
//
//   - a request head with lines ended by a bare LF. fasthttp finds the end
//     of such a head but its header scanner waits for CRLF CRLF, so the
//     request would hang until the read timeout;
//   - an HTTP version other than 1.1 and 1.0 (fasthttp takes HTTP/9.9 for
//     1.0);
//   - a body framed both by Transfer-Encoding: chunked and Content-Length,
//     which RFC 9112 calls a possible smuggling attempt; a chunked body
//     alone gets 411: graft reads bodies whose length it knows before it
//     reads them (body.go).

// errBareLF is what a connection's Read returns once the request head it
// carries has a line ended by a bare LF; fasthttp hands it, wrapped, to
// the error handler.
var errBareLF = errors.New("request head line ended by a bare LF, not CRLF")

// headScan looks at the bytes of each request head as they are read, for
// a line ended by a bare LF, until the head's end (CRLF CRLF). Reading
// resets it for the next request when the connection turns idle. It only
// looks at the first head after each idle turn: a second request sent
// before the first was answered (pipelining, which API servers do not do)
// is left to fasthttp and the read timeout.
type headScan struct {
	// last holds the last four bytes seen, the newest lowest.
	last   uint32
	done   bool
	bareLF bool
}

const crlfcrlf = '\r'<<24 | '\n'<<16 | '\r'<<8 | '\n'

func (h *headScan) scan(p []byte) {
	if h.done {
		return
	}
	last := h.last
	for _, b := range p {
		if b == '\n' && byte(last) != '\r' {
			h.bareLF, h.done = true, true
			return
		}
		last = last<<8 | uint32(b)
		if last == crlfcrlf {
			h.done = true
			break
		}
	}
	h.last = last
}

// reset starts looking at the next request head.
func (h *headScan) reset() { *h = headScan{} }

var (
	http11 = []byte("HTTP/1.1")
	http10 = []byte("HTTP/1.0")
)

// Refusal reasons before the engine, the reason label of
// graft_http_refusals_total.
const (
	refusedBareLF           = "bare_lf"
	refusedHTTPVersion      = "http_version"
	refusedConflictingFrame = "conflicting_framing"
	refusedChunked          = "length_required"
	refusedBodyTooLarge     = "body_too_large"
	refusedBodyBudget       = "body_bytes_in_flight"
	refusedBodyRead         = "body_read"
	// refusedToken: no valid token of the API server's (apitoken.go).
	refusedToken = "api_server_token"
)

// strictRequest refuses a request no API server sends. It answers and
// returns false, or returns true for a request to serve.
func (s *Server) strictRequest(ctx *fasthttp.RequestCtx) bool {
	h := &ctx.Request.Header
	if sc, ok := ctx.Conn().(*serverConn); ok && sc.head.bareLF {
		// fasthttp read the head although a line ended with a bare LF.
		s.refuse(ctx, refusedBareLF, fasthttp.StatusBadRequest, errBareLF.Error()+"\n")
		return false
	}
	if proto := h.Protocol(); !bytes.Equal(proto, http11) && !bytes.Equal(proto, http10) {
		s.refuse(ctx, refusedHTTPVersion, fasthttp.StatusBadRequest,
			"unsupported HTTP version "+quoteShort(proto)+": graft speaks HTTP/1.1\n")
		return false
	}
	if h.ContentLength() == -1 { // Transfer-Encoding: chunked
		if hasField(h.RawHeaders(), "content-length") {
			s.refuse(ctx, refusedConflictingFrame, fasthttp.StatusBadRequest,
				"conflicting framing: Transfer-Encoding: chunked and Content-Length in one request\n")
			return false
		}
		s.refuse(ctx, refusedChunked, fasthttp.StatusLengthRequired,
			"Transfer-Encoding: chunked is not accepted: send Content-Length\n")
		return false
	}
	return true
}

// refuse answers a request refused before the engine, counts it, and
// closes the connection: its body may be unread, and what follows it on
// the connection cannot be trusted to be a request.
func (s *Server) refuse(ctx *fasthttp.RequestCtx, reason string, code int, msg string) {
	s.metrics.refusal(reason).Inc()
	ctx.Error(msg, code)
	ctx.SetConnectionClose()
	markLinger(ctx.Conn())
}

// hasField reports whether a raw request head holds a field named name
// (lower case), at the start of a line.
func hasField(raw []byte, name string) bool {
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) > len(name) && line[len(name)] == ':' && bytes.EqualFold(line[:len(name)], []byte(name)) {
			return true
		}
	}
	return false
}

// quoteShort quotes b for a message, at most 32 bytes of it.
func quoteShort(b []byte) string {
	const max = 32
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}
