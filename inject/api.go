package inject

import (
	"errors"

	"github.com/graftdev/graft/templates"
)

// engineState is replaced by the real implementation.
type engineState struct{ profileNames []string }

var errTODO = errors.New("engine not implemented yet")

// New builds an Engine from cfg and the template set.
func New(cfg Config, set *templates.Set, opts ...EngineOption) (*Engine, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, set: set, impl: &engineState{}}
	for _, o := range opts {
		o(e)
	}
	return e, nil
}

// Admit answers the AdmissionReview in body: it appends the response
// AdmissionReview to dst and returns it with a Result. body is only read,
// and only during the call. An error means no response was written: the
// body is not a review (ErrMalformed) or the profile is unknown
// (ErrUnknownProfile).
func (e *Engine) Admit(dst, body []byte, o Options) ([]byte, Result, error) {
	return dst, Result{}, errTODO
}

// Fail answers the review in body as the profile's failure mode says for
// reason (ReasonOverload, ReasonBudgetExceeded or ReasonInternal), without
// injecting: allowed with a warning, or denied with a message.
func (e *Engine) Fail(dst, body []byte, o Options, reason Reason) ([]byte, Result, error) {
	return dst, Result{}, errTODO
}

// Explanation is what `graft explain` shows: the decision and everything
// that led to it.
type Explanation struct {
	Result    Result
	Profile   string
	Templates []string
	Params    []ParamValue
	Warnings  []string
	// Message is the deny message, if denied.
	Message string
	// Patch is the RFC 6902 patch (JSON), if any.
	Patch []byte
	// Response is the whole AdmissionReview response.
	Response []byte
}

// ParamValue is one template parameter's effective value and its source.
type ParamValue struct {
	Template string
	Param    string
	Value    string
	// Source is "default", "profile" or "annotation".
	Source string
}

// Explain admits body like Admit and reports the details behind the answer.
// It allocates freely: it is for humans, not the request path.
func (e *Engine) Explain(body []byte, o Options) (*Explanation, error) {
	return nil, errTODO
}
