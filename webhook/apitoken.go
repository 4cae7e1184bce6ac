package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/graftdev/graft/config"
)

// The API server's token (KEP-6060): with server.apiServerToken set, a
// webhook request must carry, as its bearer token, a ServiceAccount token
// the API server itself vouches for. graft trusts no claim it reads from
// the token: the issuer's TokenReview decides (signature, expiry, audience,
// the bound webhook configuration still existing), and graft then checks
// what the review reports of the token's binding and attestation. Reviews
// are remembered, so the API server is asked once per token, not per
// request.

// TokenReviewer asks the API server whether token authenticates for
// audience: a TokenReview. graft serve passes one that reaches the API
// server as graft's ServiceAccount.
type TokenReviewer func(ctx context.Context, token, audience string) (TokenReview, error)

// TokenReview is what the API server says of a token.
type TokenReview struct {
	Authenticated bool
	// Audiences are those of the review's the token is valid for.
	Audiences []string
	Username  string
	// Extra is the user's extra information: for a token bound to a
	// webhook configuration, its name and the token's attestations.
	Extra map[string][]string
	// Error is the API server's reason when it could not check.
	Error string
}

// The keys of TokenReview.Extra a webhook-bound token carries (k8s.io/apiserver
// pkg/authentication/serviceaccount).
const (
	extraMutatingWebhookConfiguration = "authentication.kubernetes.io/mutatingwebhookconfiguration-name"
	extraAdmissionReviewAPIGroups     = "attestation.authentication.kubernetes.io/admissionReviewAPIGroups"
)

// Bounds of the token check.
const (
	// tokenReviewTTL is the longest a review is remembered: a token whose
	// webhook configuration is deleted stops working within it.
	tokenReviewTTL = time.Minute
	// tokenRefusalTTL is how long a refused token stays refused without
	// asking again, so that a client repeating one costs nothing.
	tokenRefusalTTL = 10 * time.Second
	// tokenReviewTimeout bounds one TokenReview.
	tokenReviewTimeout = 5 * time.Second
	// maxTokenReviews is how many TokenReviews may be in flight at once: a
	// client sending new tokens cannot make graft flood the API server.
	// The API server's own token is reviewed once every ten minutes or so.
	maxTokenReviews = 4
	// maxCachedTokens bounds the remembered reviews; at the bound the
	// expired go, and if none has, all do.
	maxCachedTokens = 1024
	// maxTokenBytes: a ServiceAccount token is a JWT of about a kilobyte.
	maxTokenBytes = 16 << 10
)

var errNoToken = errors.New("no bearer token: the API server's token is required (server.apiServerToken)")

// tokenAuth checks the API server's token on webhook requests.
type tokenAuth struct {
	audience      string // config.APIServerToken.Audience
	configuration string // config.APIServerToken.WebhookConfiguration
	review        TokenReviewer
	now           func() time.Time
	reviews       chan struct{} // maxTokenReviews slots

	mu    sync.Mutex
	cache map[[sha256.Size]byte]tokenVerdict
}

// tokenVerdict is a remembered review of one token.
type tokenVerdict struct {
	// audience is the full audience the token was checked for.
	audience string
	err      error // nil: accepted
	until    time.Time
}

func newTokenAuth(cfg *config.APIServerToken, review TokenReviewer, now func() time.Time) *tokenAuth {
	return &tokenAuth{
		audience: cfg.Audience, configuration: cfg.WebhookConfiguration,
		review: review, now: now,
		reviews: make(chan struct{}, maxTokenReviews),
		cache:   map[[sha256.Size]byte]tokenVerdict{},
	}
}

// check returns nil if the request carries a token the API server
// vouches for, for this webhook and the request's path.
func (a *tokenAuth) check(ctx *fasthttp.RequestCtx) error {
	token, ok := bytes.CutPrefix(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization), []byte("Bearer "))
	if !ok || len(token) == 0 {
		return errNoToken
	}
	if len(token) > maxTokenBytes {
		return fmt.Errorf("bearer token of %d bytes: no ServiceAccount token is that long", len(token))
	}
	path := ctx.Path()
	key := sha256.Sum256(token)
	now := a.now()
	a.mu.Lock()
	v, ok := a.cache[key]
	a.mu.Unlock()
	if ok && now.Before(v.until) && a.isAudience(v.audience, path) {
		return v.err
	}
	audience := a.audience + string(path)
	// Not the request's context: fasthttp's ends with the server, and a
	// review is bounded by tokenReviewTimeout.
	final, err := a.verify(context.Background(), string(token), audience, now)
	if final {
		a.remember(key, audience, err, now, string(token))
	}
	return err
}

// isAudience reports whether audience is this webhook's for path, without
// allocating.
func (a *tokenAuth) isAudience(audience string, path []byte) bool {
	return len(audience) == len(a.audience)+len(path) && audience[:len(a.audience)] == a.audience &&
		audience[len(a.audience):] == string(path)
}

// verify has the API server review token, then checks what it says of the
// token's binding. final is false when no verdict was reached (the review
// could not be made), which is not remembered.
func (a *tokenAuth) verify(ctx context.Context, token, audience string, now time.Time) (final bool, err error) {
	if !jwtUnexpired(token, now) {
		// Not a token the API server could accept: spare it the review.
		return true, errors.New("bearer token is not an unexpired JWT")
	}
	select {
	case a.reviews <- struct{}{}:
		defer func() { <-a.reviews }()
	default:
		return false, fmt.Errorf("%d token reviews in flight already; try again", maxTokenReviews)
	}
	rctx, cancel := context.WithTimeout(ctx, tokenReviewTimeout)
	defer cancel()
	r, err := a.review(rctx, token, audience)
	if err != nil {
		return false, fmt.Errorf("token review: %w", err)
	}
	return true, a.judge(r, audience)
}

// judge decides on a TokenReview's answer.
func (a *tokenAuth) judge(r TokenReview, audience string) error {
	switch {
	case !r.Authenticated:
		if r.Error != "" {
			return fmt.Errorf("the API server does not authenticate the token: %s", r.Error)
		}
		return errors.New("the API server does not authenticate the token")
	case !slices.Contains(r.Audiences, audience):
		// An authenticator that ignores audiences answers with none.
		return fmt.Errorf("the token is not for %s (its review's audiences: %v)", audience, r.Audiences)
	case !slices.Equal(r.Extra[extraMutatingWebhookConfiguration], []string{a.configuration}):
		return fmt.Errorf("%s's token is not bound to MutatingWebhookConfiguration %s", r.Username, a.configuration)
	case !slices.Equal(r.Extra[extraAdmissionReviewAPIGroups], []string{"*"}):
		return fmt.Errorf("%s's token attests admission reviews of API groups %v, not of all (\"*\"), which Pods need",
			r.Username, r.Extra[extraAdmissionReviewAPIGroups])
	}
	return nil
}

// remember keeps a verdict: an acceptance for tokenReviewTTL at most and
// never past the token's own expiry, a refusal for tokenRefusalTTL.
func (a *tokenAuth) remember(key [sha256.Size]byte, audience string, err error, now time.Time, token string) {
	until := now.Add(tokenRefusalTTL)
	if err == nil {
		until = now.Add(tokenReviewTTL)
		// The review proved the token genuine, so its exp claim is too.
		if exp, ok := jwtExpiry(token); ok && exp.Before(until) {
			until = exp
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= maxCachedTokens {
		for k, v := range a.cache {
			if !now.Before(v.until) {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= maxCachedTokens {
			clear(a.cache)
		}
	}
	a.cache[key] = tokenVerdict{audience: audience, err: err, until: until}
}

// jwtExpiry reads a JWT's exp claim, unverified: callers trust it only
// once the issuer has vouched for the token, or use it only to refuse.
func jwtExpiry(token string) (time.Time, bool) {
	parts := bytes.SplitN([]byte(token), []byte("."), 4)
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(string(parts[1]))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	exp, err := claims.Exp.Int64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(exp, 0), true
}

// jwtUnexpired reports whether token looks like a JWT whose exp is still
// ahead: the cheap refusal of what no issuer would accept.
func jwtUnexpired(token string, now time.Time) bool {
	exp, ok := jwtExpiry(token)
	return ok && now.Before(exp)
}
