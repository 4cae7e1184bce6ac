package webhook

import (
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
)

// shutdownPoll is how often shutdown looks for connections that are left.
const shutdownPoll = 10 * time.Millisecond

// retireSweep is how often idle connections are swept once the listener
// has closed, at most: a quarter of the drain delay when that is shorter.
// A client that still wants a connection to graft takes a pooled one well
// within it, so one idle through a whole interval, while the client sent
// no request, is left for good. The API server leaves graft's connections
// alone once endpoint removal has reached it: they are retired and the
// process exits at most two intervals after the listener closed.
const retireSweep = 2 * time.Second

// serveTLS is the webhook port's handler: the routes, then whether this
// response ends its connection. During the drain every response does, so
// a client's pooled connections leave graft one by one, each right after
// an answer, which is the one moment a server can end a connection without
// racing a request on it. Otherwise a connection ends once it reaches its
// age (rotation); fasthttp's MaxRequestsPerConn is the request cap.
func (s *Server) serveTLS(ctx *fasthttp.RequestCtx) {
	if !s.strictRequest(ctx) {
		return
	}
	sc, _ := ctx.Conn().(*serverConn)
	if sc != nil {
		sc.bodyRead = false
	}
	s.handle(ctx)
	if s.stopping.Load() || s.rotate.due(ctx) {
		ctx.SetConnectionClose()
	}
	// A body the handler did not read (a refused method or route) is
	// still on the connection, past what fasthttp read with the headers:
	// the connection cannot carry another request.
	if ctx.Request.Header.ContentLength() > bodyPrefetch && (sc == nil || !sc.bodyRead) {
		ctx.SetConnectionClose()
		markLinger(ctx.Conn())
	}
}

// rotation ends webhook connections once they are maxAge old (see
// config.Server.MaxConnAge).
type rotation struct{ maxAge time.Duration }

// due reports whether the connection of ctx has reached its age. The
// age is the serverConn's own: with ReduceMemoryUsage fasthttp hands an
// idle connection's next request a fresh context, whose ConnTime is zero.
func (r rotation) due(ctx *fasthttp.RequestCtx) bool {
	if r.maxAge <= 0 {
		return false
	}
	opened := ctx.ConnTime()
	if sc, ok := ctx.Conn().(*serverConn); ok {
		opened = sc.opened
	}
	return ctx.Time().Sub(opened) >= r.ageLimit(ctx.ConnID())
}

// ageLimit is maxAge less up to a quarter, in 16 steps by connection id,
// so that the connections an API server opens in one burst do not all
// end in the same instant.
func (r rotation) ageLimit(connID uint64) time.Duration {
	return r.maxAge - r.maxAge/64*time.Duration(connID%16)
}

// EndDrain ends the drain delay at once, if it is running or when it
// starts: `graft serve` calls it on a second SIGTERM or SIGINT.
func (s *Server) EndDrain() { s.endDrainOnce.Do(func() { close(s.endDrain) }) }

// drain keeps serving for delay while /readyz fails and every response
// closes its connection, so that the endpoint's removal reaches the API
// servers and their pools leave before the listener closes. It returns
// early on EndDrain or when a server stops (its error).
func (s *Server) drain(delay time.Duration, serveErr <-chan error) error {
	s.log.Info("shutting down: not ready, answering with Connection: close until the drain delay is over",
		zap.Duration("drain_delay", delay))
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.endDrain:
		s.log.Info("drain delay cut short")
	case err := <-serveErr:
		s.log.Error("server stopped", zap.Error(err))
		return err
	}
	return nil
}

// shutdown closes the webhook listener, waits for the connections to
// finish their requests and retires the ones left idle (conns.go), at most
// grace; then it closes whatever is left.
func (s *Server) shutdown(grace time.Duration) {
	s.log.Info("closing the listener; finishing requests in flight", zap.Duration("grace", grace))
	_ = s.tlsLn.Close()
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	poll := time.NewTicker(shutdownPoll)
	defer poll.Stop()
	nextSweep := time.Now()
	retired := 0
	for s.conns.len() > 0 {
		if now := time.Now(); !now.Before(nextSweep) {
			retired += s.conns.sweep()
			nextSweep = now.Add(s.retireEvery)
		}
		select {
		case <-deadline.C:
			s.log.Warn("grace period over with requests still in flight; closing their connections",
				zap.Int("connections", s.conns.closeAll()))
			s.waitConnsClosed(time.Second)
			return
		case <-poll.C:
		}
	}
	if retired > 0 {
		s.log.Info("idle connections retired", zap.Int("connections", retired))
	}
}

// waitConnsClosed gives fasthttp at most limit to let closed connections go.
func (s *Server) waitConnsClosed(limit time.Duration) {
	for end := time.Now().Add(limit); s.conns.len() > 0 && time.Now().Before(end); {
		time.Sleep(shutdownPoll)
	}
}
