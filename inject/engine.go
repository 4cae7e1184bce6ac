// Package inject is graft's injection engine: AdmissionReview bytes in,
// AdmissionReview response bytes out. It does no I/O and keeps no global
// state; the server turns its Result into metrics and logs.
package inject

import (
	"errors"
	"slices"
	"time"

	"github.com/graftdev/graft/templates"
)

// Errors returned by Admit for requests that are not an AdmissionReview the
// engine can answer. The server maps them to HTTP statuses.
var (
	// ErrMalformed: the body is not a well-formed AdmissionReview (400).
	ErrMalformed = errors.New("malformed admission review")
	// ErrUnknownProfile: no profile of that name (404).
	ErrUnknownProfile = errors.New("unknown profile")
)

// Options are per-request inputs to Admit.
type Options struct {
	// Profile selects the profile; empty means the default profile.
	Profile string
	// Revision names the revision or tag (Revisions only; an Engine serves
	// one revision); empty means the default revision.
	Revision string
	// Deadline, when not zero, bounds the work: past it the engine stops
	// and answers per the profile's failure mode (ReasonBudgetExceeded).
	Deadline time.Time
	// PodSecurity is the Pod Security level the Pod's namespace enforces,
	// as the webhook's route says it (a profile allowed more than
	// restricted is registered once per level); empty when unknown, and
	// then not checked. A Pod whose sidecars need more is refused
	// (ReasonPodSecurity).
	PodSecurity templates.Level
}

// Engine admits Pods. It is safe for concurrent use; build a new Engine to
// change configuration or templates and swap it in atomically.
type Engine struct {
	cfg  Config
	now  func() time.Time
	impl *engineState
}

// EngineOption configures an Engine.
type EngineOption func(*Engine)

// WithClock sets the clock used for deadlines (tests drive budgets with it).
func WithClock(now func() time.Time) EngineOption { return func(e *Engine) { e.now = now } }

// Profiles returns the configured profile names, sorted.
func (e *Engine) Profiles() []string { return slices.Clone(e.impl.profileNames) }

// Revision returns the name of the revision this engine serves.
func (e *Engine) Revision() string { return e.cfg.Revision }

// DefaultProfile returns the profile served on /inject.
func (e *Engine) DefaultProfile() string { return e.cfg.DefaultProfile }
