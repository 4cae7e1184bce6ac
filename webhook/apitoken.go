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
	"strings"
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
	err   error // nil: accepted
	until time.Time
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
// vouches for, for one of graft's webhook routes. A token is for one
// webhook's URL, path included, and the API server's admission kubeconfig
// (how 1.37 presents one) holds one token per server: graft accepts it on
// every route, since they are all one server's.
func (a *tokenAuth) check(ctx *fasthttp.RequestCtx) error {
	token, ok := bytes.CutPrefix(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization), []byte("Bearer "))
	if !ok || len(token) == 0 {
		return errNoToken
	}
	if len(token) > maxTokenBytes {
		return fmt.Errorf("bearer token of %d bytes: no ServiceAccount token is that long", len(token))
	}
	key := sha256.Sum256(token)
	now := a.now()
	a.mu.Lock()
	v, ok := a.cache[key]
	a.mu.Unlock()
	if ok && now.Before(v.until) {
		return v.err
	}
	// Not the request's context: fasthttp's ends with the server, and a
	// review is bounded by tokenReviewTimeout.
	final, err := a.verify(context.Background(), string(token), now)
	if final {
		a.remember(key, err, now, string(token))
	}
	return err
}

// ours reports whether audience is the URL of one of graft's webhook
// routes: the configured base and /inject or a path under it.
func (a *tokenAuth) ours(audience string) bool {
	path, ok := strings.CutPrefix(audience, a.audience)
	return ok && (path == string(routeInject) || strings.HasPrefix(path, string(routeInject)+"/"))
}

// verify has the API server review token, then checks what it says of the
// token's binding. final is false when no verdict was reached (the review
// could not be made), which is not remembered.
func (a *tokenAuth) verify(ctx context.Context, token string, now time.Time) (final bool, err error) {
	claims, ok := parseJWTClaims(token)
	if !ok || !now.Before(claims.expiry()) {
		// Not a token the API server could accept: spare it the review.
		return true, errors.New("bearer token is not an unexpired JWT")
	}
	// The claim only picks which of graft's audiences to ask the API
	// server about; the review decides whether the token has it.
	i := slices.IndexFunc(claims.Aud, a.ours)
	if i < 0 {
		return true, fmt.Errorf("the token is not for graft's webhook (its audiences: %q; want %s/inject...)", claims.Aud, a.audience)
	}
	audience := claims.Aud[i]
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
func (a *tokenAuth) remember(key [sha256.Size]byte, err error, now time.Time, token string) {
	until := now.Add(tokenRefusalTTL)
	if err == nil {
		until = now.Add(tokenReviewTTL)
		// The review proved the token genuine, so its exp claim is too.
		if claims, ok := parseJWTClaims(token); ok && claims.expiry().Before(until) {
			until = claims.expiry()
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
	a.cache[key] = tokenVerdict{err: err, until: until}
}

// jwtClaims are the claims of a JWT graft reads, unverified: to refuse
// what no issuer would accept, to choose what to ask the issuer, and,
// once the issuer has vouched for the token, to know its expiry.
type jwtClaims struct {
	Exp int64    `json:"exp"`
	Aud audClaim `json:"aud"`
}

func (c jwtClaims) expiry() time.Time { return time.Unix(c.Exp, 0) }

// audClaim is a JWT's aud: one string or a list of them.
type audClaim []string

func (a *audClaim) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = audClaim{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*a = many
	return nil
}

// parseJWTClaims decodes the payload of a compact JWT.
func parseJWTClaims(token string) (jwtClaims, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return jwtClaims{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return jwtClaims{}, false
	}
	var c jwtClaims
	if err := json.Unmarshal(payload, &c); err != nil || c.Exp == 0 {
		return jwtClaims{}, false
	}
	return c, true
}
