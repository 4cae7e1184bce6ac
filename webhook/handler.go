package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/admin"
	"github.com/graftdev/graft/templates"
)

var (
	routeInject  = []byte("/inject")
	routeHealthz = []byte(admin.PathHealthz)
	routeReadyz  = []byte(admin.PathReadyz)
	routeMetrics = []byte(admin.PathMetrics)
	routeVersion = []byte(admin.PathVersion)
	jsonType     = []byte("application/json")
)

// handle routes a request on the TLS port:
// /inject[/<profile>[.<level>][/<revision or tag>]], /healthz, /readyz
// and, where configured, /metrics.
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	path := ctx.Path()
	if bytes.Equal(path, routeMetrics) && !s.metricsOnWebhookPort {
		ctx.Error("not found: /metrics is served on the admin port", fasthttp.StatusNotFound)
		return
	}
	if bytes.Equal(path, routeVersion) {
		// Which build serves is for operators, not for every client that
		// can reach the webhook port.
		ctx.Error("not found: /version is served on the admin port", fasthttp.StatusNotFound)
		return
	}
	if rest, ok := bytes.CutPrefix(path, routeInject); ok {
		if len(rest) == 0 {
			s.inject(ctx, nil, nil, "")
			return
		}
		profile, revision, ok := splitRoute(rest)
		var level templates.Level
		if ok {
			profile, level, ok = cutLevel(profile)
		}
		if !ok {
			ctx.Error("not found", fasthttp.StatusNotFound)
			return
		}
		s.inject(ctx, profile, revision, level)
		return
	}
	if bytes.Equal(path, routeHealthz) || bytes.Equal(path, routeReadyz) || bytes.Equal(path, routeMetrics) {
		s.adminRoute(ctx)
		return
	}
	ctx.Error("not found", fasthttp.StatusNotFound)
}

// adminRoute answers an admin route on the webhook port as the admin port
// does, with the admin server's handler. A body is refused before it:
// handing one over would read it whole, outside the body budget.
func (s *Server) adminRoute(ctx *fasthttp.RequestCtx) {
	// -2: no Content-Length, no body (chunked, -1, is refused before).
	if ctx.Request.Header.ContentLength() > 0 {
		ctx.Error("an admin request carries no body", fasthttp.StatusRequestEntityTooLarge)
		return
	}
	s.adminRoutes(ctx)
}

// cutLevel splits "<profile>.<level>", the route of a profile's webhook
// for namespaces whose Pod Security enforce label is level
// (internal/registration), into the profile and the level; a profile
// alone has no level. The level is one of the constants, so nothing
// allocates.
func cutLevel(seg []byte) (profile []byte, level templates.Level, ok bool) {
	profile, l, dotted := bytes.Cut(seg, []byte{'.'})
	if !dotted {
		return seg, "", true
	}
	for _, want := range templates.Levels() {
		if string(l) == string(want) {
			return profile, want, len(profile) > 0
		}
	}
	return nil, "", false
}

// splitRoute reads "/<profile>" or "/<profile>/<revision>" (revision nil
// when absent); no part may be empty or hold another slash.
func splitRoute(rest []byte) (profile, revision []byte, ok bool) {
	if len(rest) < 2 || rest[0] != '/' {
		return nil, nil, false
	}
	profile, revision, hasRevision := bytes.Cut(rest[1:], []byte{'/'})
	if len(profile) == 0 || (hasRevision && (len(revision) == 0 || bytes.IndexByte(revision, '/') >= 0)) {
		return nil, nil, false
	}
	return profile, revision, true
}

// inject answers one AdmissionReview. profileName is nil for /inject,
// revisionName for routes without a revision or tag, and level is the
// namespace's Pod Security level where the route says it.
//
// The body is read into a buffer of the body budget (body.go), handed to
// the engine without a copy, and given back when this function returns:
// so are the Result's UID, Namespace and Name, which alias it.
func (s *Server) inject(ctx *fasthttp.RequestCtx, profileName, revisionName []byte, level templates.Level) {
	if !ctx.IsPost() {
		ctx.Error("method not allowed: use POST", fasthttp.StatusMethodNotAllowed)
		ctx.Response.Header.Set(fasthttp.HeaderAllow, "POST")
		return
	}
	if !isJSON(ctx.Request.Header.ContentType()) {
		ctx.Error("unsupported content type: want application/json", fasthttp.StatusUnsupportedMediaType)
		return
	}
	if s.tokens != nil {
		if err := s.tokens.check(ctx); err != nil {
			s.log.Warn("request refused: not the API server's token", zap.Error(err))
			s.refuse(ctx, refusedToken, fasthttp.StatusUnauthorized, err.Error()+"\n")
			return
		}
	}

	st := s.state.Load()
	timeoutArg := ctx.QueryArgs().Peek("timeout")
	body, ok := s.readBody(ctx, st, timeoutArg)
	if !ok {
		return
	}
	defer s.bodies.release(&body)

	s.metrics.inflight.Inc()
	n := s.inflight.Add(1)
	defer func() {
		s.inflight.Add(-1)
		s.metrics.inflight.Dec()
		if p := recover(); p != nil {
			s.recovered(ctx, st, p)
		}
	}()

	start := s.now()
	profile, known := st.profile(profileName)
	if !known {
		// Not one of ours: let the engine say so (ErrUnknownProfile). This
		// path may allocate; it never serves a real API server.
		profile = string(profileName)
	}
	revision, knownRevision := st.revision(revisionName)
	if !knownRevision {
		revision = string(revisionName) // ErrUnknownRevision, as above
	}
	opts := inject.Options{
		Profile:     profile,
		Revision:    revision,
		PodSecurity: level,
		Deadline:    deadline(start, st.settings.Budget.Duration, st.settings.TimeoutMargin.Duration, timeoutArg),
	}
	rb := s.bufs.get()
	var (
		out []byte
		res inject.Result
		err error
	)
	if limit := st.settings.MaxInFlight; limit > 0 && n > int64(limit) {
		out, res, err = st.revs.Fail(rb.b, body.b, opts, inject.ReasonOverload)
	} else {
		out, res, err = st.revs.Admit(rb.b, body.b, opts)
		if err != nil && !isClientError(err) {
			s.log.Error("engine error; answering per the failure mode", zap.String("profile", profile),
				zap.String("revision", revision), zap.Error(err))
			out, res, err = st.revs.Fail(rb.b[:0], body.b, opts, inject.ReasonInternal)
		}
	}
	if err != nil {
		s.bufs.put(rb)
		s.replyError(ctx, profile, revision, err)
		s.metrics.countError(st.bind, labelProfile(profile, known))
		s.metrics.duration.Observe(s.now().Sub(start).Seconds())
		return
	}
	ctx.SetContentTypeBytes(jsonType)
	rb.b = out
	ctx.Response.SetBodyRaw(out)
	ctx.SetUserValue(respBufKey, rb) // closed, so pooled again, after the write

	d := s.now().Sub(start)
	s.metrics.observe(st.bind, &res, d.Seconds())
	logAdmission(s.log, &res, d)
}

// readBody reads the request's body within its limits: at most
// maxBodyBytes, with bytes of the body budget, by the API server's
// ?timeout= (less the margin) or the read timeout, whichever is sooner.
// A request refused here is answered, counted and its connection closed.
func (s *Server) readBody(ctx *fasthttp.RequestCtx, st *state, timeoutArg []byte) (requestBody, bool) {
	cfg := &st.settings
	if n := ctx.Request.Header.ContentLength(); n > cfg.MaxBodyBytes {
		s.metrics.countError(st.bind, unknownProfile)
		s.refuse(ctx, refusedBodyTooLarge, fasthttp.StatusRequestEntityTooLarge,
			fmt.Sprintf("request body of %d bytes is larger than %d bytes\n", n, cfg.MaxBodyBytes))
		return requestBody{}, false
	}
	// Real time: an I/O wait, not the engine's budget (the clock tests drive).
	wait := deadline(time.Now(), cfg.ReadTimeout.Duration, cfg.TimeoutMargin.Duration, timeoutArg)
	body, err := s.bodies.readBody(ctx, wait)
	if sc, ok := ctx.Conn().(*serverConn); ok {
		sc.bodyRead = err == nil
	}
	if err == nil {
		return body, true
	}
	s.bodies.release(&body)
	s.metrics.countError(st.bind, unknownProfile)
	if errors.Is(err, errBodyBudget) {
		s.log.Warn("request refused: request bodies in flight at their limit", zap.Int64("max_body_bytes_in_flight", cfg.MaxBodyBytesInFlight),
			zap.Int("content_length", ctx.Request.Header.ContentLength()))
		s.refuse(ctx, refusedBodyBudget, fasthttp.StatusServiceUnavailable,
			"request bodies in flight are at their limit (server.maxBodyBytesInFlight); try again\n")
		return requestBody{}, false
	}
	s.log.Debug("request body not read", zap.Error(err))
	code := fasthttp.StatusBadRequest
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		code = fasthttp.StatusRequestTimeout
	}
	s.refuse(ctx, refusedBodyRead, code, shortMessage(err))
	return requestBody{}, false
}

func labelProfile(p string, known bool) string {
	if known {
		return p
	}
	return unknownProfile
}

// isClientError reports the errors that are the request's fault: they
// are answered with an HTTP error, not by the failure mode.
func isClientError(err error) bool {
	return errors.Is(err, inject.ErrMalformed) || errors.Is(err, inject.ErrUnknownProfile) ||
		errors.Is(err, inject.ErrUnknownRevision)
}

// replyError answers a request the engine could not answer with a review.
func (s *Server) replyError(ctx *fasthttp.RequestCtx, profile, revision string, err error) {
	switch {
	case errors.Is(err, inject.ErrMalformed):
		s.log.Debug("malformed review", zap.Error(err))
		ctx.Error(shortMessage(err), fasthttp.StatusBadRequest)
	case errors.Is(err, inject.ErrUnknownProfile):
		ctx.Error(fmt.Sprintf("unknown profile %q\n", profile), fasthttp.StatusNotFound)
	case errors.Is(err, inject.ErrUnknownRevision):
		ctx.Error(fmt.Sprintf("unknown revision or tag %q\n", revision), fasthttp.StatusNotFound)
	default:
		s.metrics.failures[inject.ReasonInternal].Inc()
		s.log.Error("engine failed to answer", zap.String("profile", profile), zap.Error(err))
		ctx.Error("internal error\n", fasthttp.StatusInternalServerError)
	}
}

// shortMessage bounds an error message sent to a client.
func shortMessage(err error) string {
	const max = 200
	msg := err.Error()
	if len(msg) > max {
		msg = msg[:max] + "..."
	}
	return msg + "\n"
}

// recovered answers 500 after a panic in a request and counts it; the
// connection and the server carry on.
func (s *Server) recovered(ctx *fasthttp.RequestCtx, st *state, p any) {
	s.metrics.failures[inject.ReasonInternal].Inc()
	s.metrics.countError(st.bind, unknownProfile)
	s.log.Error("panic in request; answered 500", zap.Any("panic", p), zap.Stack("stack"))
	ctx.Response.Reset()
	ctx.Error("internal error\n", fasthttp.StatusInternalServerError)
}

// isJSON accepts application/json with optional parameters
// ("application/json; charset=utf-8"), case-insensitively.
func isJSON(ct []byte) bool {
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return bytes.EqualFold(bytes.TrimSpace(ct), jsonType)
}
