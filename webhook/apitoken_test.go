package webhook

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/config"
)

const (
	testAudience = "https://graft.graft-system.svc:443"
	testMWC      = "graft"
)

var testTokenConfig = config.APIServerToken{Audience: testAudience, WebhookConfiguration: testMWC}

// fakeJWT is a token shaped as a JWT for audience aud (graft's /inject
// if empty) expiring at exp; its signature is nothing, so only a reviewer
// can say it is good.
func fakeJWT(exp time.Time, id string, aud ...string) string {
	if aud == nil {
		aud = []string{testAudience + "/inject"}
	}
	claims, err := json.Marshal(map[string]any{"exp": exp.Unix(), "jti": id, "aud": aud})
	if err != nil {
		panic(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc(claims) + ".c2ln"
}

// reviewer answers reviews from a table of tokens and counts them.
type reviewer struct {
	mu      sync.Mutex
	answers map[string]TokenReview
	err     error
	calls   []string // audiences asked for
}

func (r *reviewer) review(_ context.Context, token, audience string) (TokenReview, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, audience)
	if r.err != nil {
		return TokenReview{}, r.err
	}
	a, ok := r.answers[token]
	if !ok {
		return TokenReview{Error: "invalid bearer token"}, nil
	}
	// As the API server does: a token is not valid for an audience it
	// was not issued for.
	if len(a.Audiences) > 0 && audience != a.Audiences[0] {
		a.Audiences = nil
		a.Authenticated = false
		a.Error = "token audiences are invalid"
	}
	return a, nil
}

func (r *reviewer) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// apiServerReview is what the API server answers for its own token bound
// to MutatingWebhookConfiguration mwc, for audience aud.
func apiServerReview(aud, mwc string, groups ...string) TokenReview {
	if groups == nil {
		groups = []string{"*"}
	}
	return TokenReview{
		Authenticated: true, Audiences: []string{aud}, Username: "system:serviceaccount:kube-system:webhook-auth",
		Extra: map[string][]string{extraMutatingWebhookConfiguration: {mwc}, extraAdmissionReviewAPIGroups: groups},
	}
}

func request(path, authorization string) *fasthttp.RequestCtx {
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI(path)
	if authorization != "" {
		ctx.Request.Header.Set(fasthttp.HeaderAuthorization, authorization)
	}
	return &ctx
}

func TestTokenCheck(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	exp := now.Add(10 * time.Minute)
	good := fakeJWT(exp, "good")
	forAgent := fakeJWT(exp, "agent", testAudience+"/inject/agent")
	tests := []struct {
		name, path, token, scheme string
		review                    TokenReview // the reviewer's answer for token
		reviewErr                 error
		want                      string // "" accepted, else part of the refusal
		reviews                   int    // TokenReviews made
	}{
		{name: "the API server's token", path: "/inject", token: good,
			review: apiServerReview(testAudience+"/inject", testMWC), reviews: 1},
		{name: "a token for one route on another route of graft's", path: "/inject", token: forAgent,
			review: apiServerReview(testAudience+"/inject/agent", testMWC), reviews: 1},
		{name: "one of several audiences", path: "/inject", token: fakeJWT(exp, "two", "https://other.svc:443/x", testAudience+"/inject"),
			review: apiServerReview(testAudience+"/inject", testMWC), reviews: 1},
		{name: "no header", path: "/inject", want: "no bearer token"},
		{name: "another scheme", path: "/inject", scheme: "Basic ", token: good, want: "no bearer token"},
		{name: "not a JWT", path: "/inject", token: "abc", want: "not an unexpired JWT"},
		{name: "expired", path: "/inject", token: fakeJWT(now.Add(-time.Second), "old"), want: "not an unexpired JWT"},
		{name: "too long", path: "/inject", token: strings.Repeat("a", maxTokenBytes+1), want: "bytes"},
		{name: "for another webhook", path: "/inject", token: fakeJWT(exp, "other", "https://other.other.svc:443/inject"), want: "not for graft's webhook"},
		{name: "for a route graft does not serve", path: "/inject", token: fakeJWT(exp, "metrics", testAudience+"/metrics"), want: "not for graft's webhook"},
		{name: "for a look-alike host", path: "/inject", token: fakeJWT(exp, "evil", testAudience+".evil.example/inject"), want: "not for graft's webhook"},
		{name: "not authenticated", path: "/inject", token: good,
			review: TokenReview{Error: "token has been invalidated"}, want: "invalidated", reviews: 1},
		{name: "its claim says graft, the issuer does not", path: "/inject", token: good,
			review: apiServerReview(testAudience+"/inject/agent", testMWC), want: "does not authenticate", reviews: 1},
		{name: "an authenticator that ignores audiences", path: "/inject", token: good,
			review: TokenReview{Authenticated: true, Username: "admin"}, want: "not for", reviews: 1},
		{name: "bound to another webhook configuration", path: "/inject", token: good,
			review: apiServerReview(testAudience+"/inject", "other"), want: "not bound to MutatingWebhookConfiguration graft", reviews: 1},
		{name: "a plain ServiceAccount token", path: "/inject", token: good,
			review: TokenReview{Authenticated: true, Audiences: []string{testAudience + "/inject"}, Username: "system:serviceaccount:team:app"},
			want:   "not bound", reviews: 1},
		{name: "attesting one group only", path: "/inject", token: good,
			review: apiServerReview(testAudience+"/inject", testMWC, "apps"), want: "attests", reviews: 1},
		{name: "the review fails", path: "/inject", token: good,
			reviewErr: errors.New("connection refused"), want: "token review: connection refused", reviews: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &reviewer{answers: map[string]TokenReview{}, err: tt.reviewErr}
			if tt.review.Audiences != nil || tt.review.Error != "" || tt.review.Authenticated {
				r.answers[tt.token] = tt.review
			}
			a := newTokenAuth(&testTokenConfig, r.review, func() time.Time { return now })
			auth := ""
			if tt.token != "" {
				auth = cmp.Or(tt.scheme, "Bearer ") + tt.token
			}
			err := a.check(request(tt.path, auth))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want a refusal saying %q", err, tt.want)
			}
			if got := r.count(); got != tt.reviews {
				t.Errorf("%d TokenReviews, want %d", got, tt.reviews)
			}
		})
	}
}

// A verdict is remembered: an acceptance for a minute at most and never
// past the token's expiry, a refusal for ten seconds; a review that could
// not be made is not remembered.
func TestTokenVerdictsRemembered(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	long := fakeJWT(now.Add(10*time.Minute), "long")
	short := fakeJWT(now.Add(20*time.Second), "short")
	bad := fakeJWT(now.Add(10*time.Minute), "bad")
	r := &reviewer{answers: map[string]TokenReview{
		long:  apiServerReview(testAudience+"/inject", testMWC),
		short: apiServerReview(testAudience+"/inject", testMWC),
	}}
	a := newTokenAuth(&testTokenConfig, r.review, clock)
	check := func(token string) error { return a.check(request("/inject", "Bearer "+token)) }

	for range 3 {
		if err := check(long); err != nil {
			t.Fatal(err)
		}
		if err := check(short); err != nil {
			t.Fatal(err)
		}
		if err := check(bad); err == nil {
			t.Fatal("an unknown token accepted")
		}
	}
	if got := r.count(); got != 3 {
		t.Fatalf("%d reviews for three tokens checked three times each, want 3", got)
	}
	now = now.Add(15 * time.Second) // the refusal is forgotten
	_ = check(bad)
	if got := r.count(); got != 4 {
		t.Errorf("%d reviews after the refusal's ten seconds, want 4", got)
	}
	now = now.Add(10 * time.Second) // past short's expiry
	if err := check(short); err == nil || !strings.Contains(err.Error(), "unexpired") {
		t.Errorf("an expired token: %v, want a refusal", err)
	}
	_ = check(long)
	if got := r.count(); got != 4 {
		t.Errorf("%d reviews within the minute, want still 4", got)
	}
	now = now.Add(time.Minute)
	_ = check(long)
	if got := r.count(); got != 5 {
		t.Errorf("%d reviews after the minute, want 5", got)
	}

	r.err = errors.New("the API server is away")
	unreached := fakeJWT(now.Add(time.Minute), "unreached")
	_ = check(unreached)
	r.err = nil
	r.answers[unreached] = apiServerReview(testAudience+"/inject", testMWC)
	if err := check(unreached); err != nil {
		t.Errorf("after a failed review, the same token: %v, want it reviewed again and accepted", err)
	}
}

// With maxTokenReviews in flight a new token is refused without a review,
// and not remembered.
func TestTokenReviewsBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	token := fakeJWT(now.Add(time.Minute), "t")
	r := &reviewer{answers: map[string]TokenReview{token: apiServerReview(testAudience+"/inject", testMWC)}}
	a := newTokenAuth(&testTokenConfig, r.review, func() time.Time { return now })
	for range maxTokenReviews {
		a.reviews <- struct{}{}
	}
	if err := a.check(request("/inject", "Bearer "+token)); err == nil || !strings.Contains(err.Error(), "in flight") {
		t.Fatalf("with every review slot taken: %v, want a refusal", err)
	}
	for range maxTokenReviews {
		<-a.reviews
	}
	if err := a.check(request("/inject", "Bearer "+token)); err != nil {
		t.Fatalf("once a slot is free: %v", err)
	}
}

// The server refuses a review without the API server's token with 401
// before reading its body, counts it, and serves one with it.
func TestServerRequiresAPIServerToken(t *testing.T) {
	token := fakeJWT(time.Now().Add(10*time.Minute), "kas")
	r := &reviewer{answers: map[string]TokenReview{token: apiServerReview(testAudience+"/inject", testMWC)}}
	ts := startServer(t, serverSetup{
		configYAML: "server:\n  apiServerToken:\n    audience: " + testAudience + "\n    webhookConfiguration: " + testMWC + "\n",
		tokenReviewer: func() (TokenReviewer, error) {
			return r.review, nil
		},
	})
	review := corpus.Review(corpus.Small)
	if code, out := ts.post(t, "/inject", review); code != http.StatusUnauthorized || !strings.Contains(string(out), "bearer token") {
		t.Fatalf("without a token: %d %.200q, want 401", code, out)
	}
	if got := metric(t, ts.reg, "graft_http_refusals_total", "reason", refusedToken); got != 1 {
		t.Errorf("refusals{%s} = %v, want 1", refusedToken, got)
	}
	req, err := http.NewRequest(http.MethodPost, ts.url+"/inject", strings.NewReader(string(review)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with the API server's token: %d, want 200", resp.StatusCode)
	}
}

// A configuration requiring the token cannot start a server that has no
// way to review one.
func TestAPIServerTokenNeedsAReviewer(t *testing.T) {
	log, _, err := NewLogger(&syncBuffer{}, "info")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := dir + "/graft.yaml"
	writeFile(t, path, "server:\n  apiServerToken:\n    audience: "+testAudience+"\n    webhookConfiguration: graft\n")
	_, err = New(Options{ConfigPath: path, Logger: log, Registry: prometheus.NewRegistry(),
		Override: func(s *config.Server) { s.Addr, s.AdminAddr = "127.0.0.1:0", "127.0.0.1:0" }})
	if err == nil || !strings.Contains(err.Error(), "no way to review tokens") {
		t.Fatalf("New: %v, want an error naming the missing reviewer", err)
	}
}

// The token's claims are read from untrusted bytes before any review:
// whatever a client sends, reading them neither panics nor yields a token
// without an expiry.
func FuzzJWTClaims(f *testing.F) {
	f.Add(fakeJWT(time.Unix(1_800_000_000, 0), "seed"))
	f.Add(fakeJWT(time.Unix(1_800_000_000, 0), "seed", "a", "b"))
	f.Add("a.b.c")
	f.Add("..")
	f.Add("eyJhbGciOiJub25lIn0.eyJleHAiOiJ4In0.")
	f.Fuzz(func(t *testing.T, token string) {
		c, ok := parseJWTClaims(token)
		if ok && c.Exp == 0 {
			t.Fatalf("%q: claims without an expiry accepted", token)
		}
	})
}
