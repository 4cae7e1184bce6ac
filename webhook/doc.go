// Package webhook is graft's admission server: fasthttp over TLS on one
// port, health and metrics on the plain-HTTP admin port every long-running
// command has (internal/admin). It knows nothing
// about Pods. It moves AdmissionReview bytes between the API server and the
// injection engine, enforces the hard edges of the HTTP exchange (method,
// content type, size, time), and turns the engine's Result into metrics and
// logs. Templates, configuration and the serving certificate are reloaded
// from disk without a restart.
package webhook
